#include "protocol/snapshot_file.h"

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

// Reads the image `header` announces in chunks, handing each to `consume`;
// Malformed when the file ends early, has bytes after it, or the digest differs.
Status ReadImage(std::istream& in, const SnapshotFileHeader& header, const std::string& path,
                 const std::function<void(std::string_view)>& consume) {
  Sha256 hash;
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
    consume(std::string_view(chunk.data(), got));
    left -= got;
  }
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

}  // namespace

std::string EncodeSnapshotFilePrefix(const SnapshotFileHeader& header) {
  const std::string body = wire::PackToString(header);
  std::string out(kSnapshotFileMagic);
  const auto length = static_cast<uint32_t>(body.size());
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((length >> shift) & 0xff));
  out += body;
  return out;
}

Result<SnapshotFileHeader> ReadSnapshotFileHeader(std::istream& in) {
  std::string magic(kSnapshotFileMagic.size(), '\0');
  in.read(magic.data(), static_cast<std::streamsize>(magic.size()));
  if (static_cast<size_t>(in.gcount()) != magic.size() || magic != kSnapshotFileMagic) {
    return Status::Malformed("not a gpool snapshot file (it does not start with GPOOLSNAP1)");
  }
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
  if (header->sha256.size() != 64) return Status::Malformed("snapshot file header: sha256 is not 64 hex digits");
  return header;
}

Result<SnapshotFile> ReadSnapshotFile(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::ifstream in, OpenForReading(path));
  auto header = ReadSnapshotFileHeader(in);
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
      ReadImage(in, file.header, path, [&](std::string_view chunk) { file.state.append(chunk); }));
  return file;
}

Result<SnapshotFileHeader> VerifySnapshotFile(const std::string& path) {
  GPOOL_ASSIGN_OR_RETURN(std::ifstream in, OpenForReading(path));
  auto header = ReadSnapshotFileHeader(in);
  if (!header.ok()) return header.status().WithContext(path);
  GPOOL_RETURN_IF_ERROR(ReadImage(in, *header, path, [](std::string_view) {}));
  return header;
}

}  // namespace gpool
