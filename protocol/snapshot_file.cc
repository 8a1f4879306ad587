#include "protocol/snapshot_file.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>

#include "protocol/base/sha256.h"
#include "protocol/wire.h"

namespace gpool {
namespace {

// A header is a handful of numbers and two short strings; anything longer is
// not one, and is refused before it is read into memory.
constexpr uint32_t kMaxHeaderBytes = 64 * 1024;

bool IsLowerHex(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Format 3: the key id and signature after the digest, kept in `header`.
Status ReadSignatureTrailer(std::istream& in, SnapshotFileHeader& header, const std::string& path) {
  std::string trailer(kSnapshotKeyIdChars + kSnapshotSignatureChars, '\0');
  in.read(trailer.data(), static_cast<std::streamsize>(trailer.size()));
  if (static_cast<size_t>(in.gcount()) != trailer.size()) {
    return Status::Malformed(path + ": truncated: the signature after the file digest is " +
                             std::to_string(in.gcount()) + " of " + std::to_string(trailer.size()) +
                             " bytes; nothing was restored");
  }
  if (!IsLowerHex(trailer)) {
    return Status::Malformed(path + ": damaged: the signature trailer is not lowercase hex; nothing was restored");
  }
  header.key_id = trailer.substr(0, kSnapshotKeyIdChars);
  header.signature = trailer.substr(kSnapshotKeyIdChars);
  return Status::Ok();
}

// Reads the image `header` announces in chunks, handing each to `consume`;
// Malformed when the file ends early, has bytes after it, or the digest differs.
Status ReadImage(std::istream& in, SnapshotFileHeader& header, const std::string& prefix,
                 const std::string& path, const std::function<void(std::string_view)>& consume) {
  Sha256 hash;
  Sha256 file_hash;  // format 2: prefix, image
  file_hash.Update(prefix);
  std::string chunk(1 << 20, '\0');
  uint64_t left = header.state_bytes;
  while (left > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left, chunk.size()));
    in.read(chunk.data(), static_cast<std::streamsize>(want));
    const auto got = static_cast<size_t>(in.gcount());
    if (got != want) {
      return Status::Malformed(path + ": truncated: the header announces " + std::to_string(header.state_bytes) +
                               " bytes of state, the file holds " +
                               std::to_string(header.state_bytes - left + got));
    }
    hash.Update(std::string_view(chunk.data(), got));
    file_hash.Update(std::string_view(chunk.data(), got));
    consume(std::string_view(chunk.data(), got));
    left -= got;
  }
  if (header.version >= 2) {
    std::string digest(kSnapshotFileDigestChars, '\0');
    in.read(digest.data(), static_cast<std::streamsize>(digest.size()));
    if (static_cast<size_t>(in.gcount()) != digest.size()) {
      return Status::Malformed(path + ": truncated: the file digest after the state is missing");
    }
    const std::string expected = file_hash.HexDigest();
    if (digest != expected) {
      return Status::Malformed(path + ": damaged or edited: the file's sha256 (header and state) is " + expected +
                               ", the file records " + digest + "; nothing was restored");
    }
    header.file_sha256 = expected;
  }
  if (header.version >= 3) GPOOL_RETURN_IF_ERROR(ReadSignatureTrailer(in, header, path));
  if (in.peek() != std::char_traits<char>::eof()) {
    return Status::Malformed(path + ": bytes after the state's end (not one snapshot file, or damaged)");
  }
  const std::string digest = hash.HexDigest();
  if (digest != header.sha256) {
    return Status::Malformed(path + ": damaged: the state's sha256 is " + digest + ", the header records " +
                             header.sha256);
  }
  return Status::Ok();
}

Result<std::ifstream> OpenForReading(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    if (error == ENOENT) return Status::NotFound("no snapshot file " + path);
    return Status::IoError("cannot open " + path + ": " + std::strerror(error));
  }
  return in;
}

Status Beyond(const char* field, uint64_t value, uint64_t low, uint64_t high) {
  return Status::InvalidArgument("snapshot file header: " + std::string(field) + " " + std::to_string(value) +
                                 " is outside " + std::to_string(low) + ".." + std::to_string(high) +
                                 " (damaged or forged); nothing was restored");
}

}  // namespace

Status ValidateSnapshotFileHeader(const SnapshotFileHeader& h) {
  if (h.index < 1 || h.index > kMaxSnapshotIndex) return Beyond("index", h.index, 1, kMaxSnapshotIndex);
  if (h.term < 1 || h.term > kMaxSnapshotTerm) return Beyond("term", h.term, 1, kMaxSnapshotTerm);
  if (h.taken_ms <= 0) {
    return Status::InvalidArgument("snapshot file header: taken_ms " + std::to_string(h.taken_ms) +
                                   " is not a time after 1970 (damaged or forged); nothing was restored");
  }
  if (h.state_bytes < 1 || h.state_bytes > kMaxSnapshotStateBytes) {
    return Beyond("state_bytes", h.state_bytes, 1, kMaxSnapshotStateBytes);
  }
  if (h.sha256.size() != 64 || !IsLowerHex(h.sha256)) {
    return Status::InvalidArgument("snapshot file header: sha256 is not 64 lowercase hex digits");
  }
  if (h.source.size() > kMaxSnapshotSourceBytes) {
    return Beyond("source length", h.source.size(), 0, kMaxSnapshotSourceBytes);
  }
  return Status::Ok();
}

std::string EncodeSnapshotFile(const SnapshotFileHeader& header, std::string_view image) {
  std::string out = EncodeSnapshotFilePrefix(header);
  out += image;
  out += Sha256::Of(out);
  return out;
}

std::string EncodeSnapshotFilePrefix(const SnapshotFileHeader& header, uint32_t format) {
  const std::string body = wire::PackToString(header);
  std::string out(format >= 3 ? kSnapshotFileMagicV3 : kSnapshotFileMagic);
  const auto length = static_cast<uint32_t>(body.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((length >> shift) & 0xff));
  out += body;
  return out;
}

std::string SnapshotSignedMessage(std::string_view file_sha256) {
  // The context keeps a signature made for anything else with the same key
  // (were it ever reused) from passing as a snapshot's.
  return "gpool snapshot file sha256 " + std::string(file_sha256);
}

Result<std::string> EncodeSnapshotFileTrailer(std::string_view key_id, std::string_view signature) {
  if (key_id.size() != kSnapshotKeyIdChars || !IsLowerHex(key_id)) {
    return Status::InvalidArgument("snapshot signature: the key id is not " + std::to_string(kSnapshotKeyIdChars) +
                                   " lowercase hex digits");
  }
  if (signature.size() != kSnapshotSignatureChars || !IsLowerHex(signature)) {
    return Status::InvalidArgument("snapshot signature: not " + std::to_string(kSnapshotSignatureChars) +
                                   " lowercase hex digits");
  }
  return std::string(key_id) + std::string(signature);
}

Result<SnapshotFileHeader> ReadSnapshotFileHeader(std::istream& in, std::string* raw) {
  std::string magic(kSnapshotFileMagic.size(), '\0');
  in.read(magic.data(), static_cast<std::streamsize>(magic.size()));
  if (static_cast<size_t>(in.gcount()) != magic.size() ||
      (magic != kSnapshotFileMagic && magic != kSnapshotFileMagicV1 && magic != kSnapshotFileMagicV3)) {
    if (static_cast<size_t>(in.gcount()) == magic.size() && magic.starts_with("GPOOLSNAP")) {
      return Status::Malformed("snapshot file of an unknown format (" + magic.substr(0, magic.size() - 1) +
                               "; this gpool reads GPOOLSNAP1, GPOOLSNAP2 and GPOOLSNAP3): written by a newer gpool?");
    }
    return Status::Malformed("not a gpool snapshot file (it does not start with GPOOLSNAP3, GPOOLSNAP2 or GPOOLSNAP1)");
  }
  const uint32_t version = magic == kSnapshotFileMagicV3 ? 3 : magic == kSnapshotFileMagic ? 2 : 1;
  std::array<unsigned char, 4> length_bytes{};
  in.read(reinterpret_cast<char*>(length_bytes.data()), 4);
  if (in.gcount() != 4) return Status::Malformed("snapshot file truncated in its header");
  uint32_t length = 0;
  for (unsigned char byte : length_bytes) length = (length << 8) | byte;
  if (length > kMaxHeaderBytes) {
    return Status::Malformed("snapshot file header of " + std::to_string(length) + " bytes (at most " +
                             std::to_string(kMaxHeaderBytes) + "): damaged");
  }
  std::string body(length, '\0');
  in.read(body.data(), length);
  if (static_cast<uint32_t>(in.gcount()) != length) return Status::Malformed("snapshot file truncated in its header");
  auto header = wire::UnpackFromString<SnapshotFileHeader>(body);
  if (!header.ok()) return header.status().WithContext("snapshot file header");
  header->version = version;
  GPOOL_RETURN_IF_ERROR(ValidateSnapshotFileHeader(*header));
  if (raw != nullptr) {
    *raw = magic;
    for (unsigned char byte : length_bytes) raw->push_back(static_cast<char>(byte));
    *raw += body;
  }
  return header;
}

Result<SnapshotFile> ReadSnapshotFile(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::ifstream in, OpenForReading(path));
  std::string prefix;
  auto header = ReadSnapshotFileHeader(in, &prefix);
  if (!header.ok()) return header.status().WithContext(path);
  SnapshotFile file;
  file.header = *header;
  const std::streampos image_start = in.tellg();
  // Reserve no more than the file can hold: a damaged length must not
  // allocate terabytes.
  in.seekg(0, std::ios::end);
  const auto end = static_cast<uint64_t>(in.tellg());
  in.seekg(image_start);
  file.state.reserve(static_cast<size_t>(std::min<uint64_t>(file.header.state_bytes, end)));
  GPOOL_RETURN_IF_ERROR(
      ReadImage(in, file.header, prefix, path, [&](std::string_view chunk) { file.state.append(chunk); }));
  return file;
}

Result<SnapshotFileHeader> VerifySnapshotFile(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::ifstream in, OpenForReading(path));
  std::string prefix;
  auto header = ReadSnapshotFileHeader(in, &prefix);
  if (!header.ok()) return header.status().WithContext(path);
  GPOOL_RETURN_IF_ERROR(ReadImage(in, *header, prefix, path, [](std::string_view) {}));
  return header;
}

}  // namespace gpool
