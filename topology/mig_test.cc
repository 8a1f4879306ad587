#include "topology/mig.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "topology/lcg.h"

namespace gpool::topology {
namespace {

const MigModel& Model(std::string_view name) {
  const MigModel* model = FindMigModel(name, 0);
  EXPECT_NE(model, nullptr) << name;
  static const MigModel kEmpty;
  return model != nullptr ? *model : kEmpty;
}

const MigProfile& Profile(const MigModel& model, std::string_view name) {
  const MigProfile* profile = FindProfile(model, name);
  EXPECT_NE(profile, nullptr) << model.name << " " << name;
  static const MigProfile kEmpty;
  return profile != nullptr ? *profile : kEmpty;
}

std::optional<uint32_t> StartFor(std::string_view model, std::string_view profile,
                                 const std::vector<MigInstance>& used) {
  return FindMigStart(Model(model), Profile(Model(model), profile), used);
}

// A made-up part, for rules no real table can reach on its own.
MigModel TinyModel() {
  MigModel model{.name = "tiny", .compute_slices = 2, .memory_slices = 4};
  model.profiles = {
      {.name = "1g.1gb", .compute_slices = 1, .memory_slices = 1, .memory_mib = 1024, .starts = {0}},
      {.name = "1g.2gb", .compute_slices = 1, .memory_slices = 1, .memory_mib = 2048, .starts = {0, 1, 2, 3}},
  };
  return model;
}

// ---------------------------------------------------------------------------
// Model lookup

TEST(MigModelTest, FindsModelsByTheirManyNames) {
  struct Case {
    std::string_view gpu_model;
    uint64_t memory_mib;
    std::string_view want;  // "" = no table
  };
  const Case cases[] = {
      {"A100-SXM4-80GB", 81920, "A100-80GB"},
      {"NVIDIA A100-SXM4-40GB", 40536, "A100-40GB"},
      {"NVIDIA A100 80GB PCIe", 0, "A100-80GB"},
      {"A100-40GB", 0, "A100-40GB"},
      {"nvidia a100-pcie-40gb", 0, "A100-40GB"},
      {"NVIDIA A100-PCIE", 40960, "A100-40GB"},  // memory tells 40 from 80 GB
      {"NVIDIA A100-PCIE", 81920, "A100-80GB"},
      {"A100", 0, ""},                            // size unknown
      {"A100", 24576, ""},                        // no A100 that size
      {"NVIDIA A800-SXM4-80GB", 81920, "A100-80GB"},
      {"A30", 24576, "A30-24GB"},
      {"NVIDIA A30", 0, "A30-24GB"},
      {"H100-SXM5-80GB", 81559, "H100-80GB"},
      {"NVIDIA H100 80GB HBM3", 0, "H100-80GB"},
      {"NVIDIA H100 PCIe", 81559, "H100-80GB"},
      {"H100 NVL", 95830, "H100-94GB"},
      {"NVIDIA H100 NVL", 0, "H100-94GB"},
      {"H100NVL", 0, "H100-94GB"},
      {"H100-SXM5-94GB", 0, "H100-94GB"},
      {"NVIDIA GH200 480GB", 97871, "H100-96GB"},
      {"NVIDIA GH200 480GB", 0, ""},  // 480 GB is the superchip, not the GPU
      {"NVIDIA H800", 81559, "H100-80GB"},
      {"H100", 0, ""},
      {"H200", 0, "H200-141GB"},
      {"NVIDIA H200 NVL", 143771, "H200-141GB"},
      {"H200-SXM5-141GB", 0, "H200-141GB"},
      {"H20", 97871, "H20-96GB"},
      {"NVIDIA H20", 0, "H20-96GB"},
      {"NVIDIA H20-3e", 0, "H20-141GB"},
      {"NVIDIA H20", 143771, "H20-141GB"},
      // No MIG, or no such part.
      {"Tesla V100-SXM2-32GB", 32768, ""},
      {"NVIDIA L20", 46068, ""},
      {"NVIDIA L40S", 46068, ""},
      {"Tesla T4", 15360, ""},
      {"NVIDIA A10", 23028, ""},
      {"NVIDIA RTX A1000", 8192, ""},
      {"NVIDIA RTX A3000", 6144, ""},
      {"NVIDIA GeForce RTX 4090", 24564, ""},
      {"", 0, ""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.gpu_model) + " / " + std::to_string(c.memory_mib));
    const MigModel* model = FindMigModel(c.gpu_model, c.memory_mib);
    if (c.want.empty()) {
      EXPECT_EQ(model, nullptr) << model->name;
    } else {
      ASSERT_NE(model, nullptr);
      EXPECT_EQ(model->name, c.want);
    }
  }
}

TEST(MigModelTest, EveryTableNameFindsItself) {
  const auto names = MigModelNames();
  for (std::string_view want : {"A30-24GB", "A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H100-96GB",
                                "H200-141GB", "H20-96GB"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  for (const auto& name : names) {
    const MigModel* model = FindMigModel(name, 0);
    ASSERT_NE(model, nullptr) << name;
    EXPECT_EQ(model->name, name);
  }
}

// The tables themselves: what the layout math relies on.
TEST(MigModelTest, TablesAreConsistent) {
  for (const auto& name : MigModelNames()) {
    SCOPED_TRACE(name);
    const MigModel& model = Model(name);
    ASSERT_FALSE(model.profiles.empty());
    std::set<std::string> seen;
    bool whole = false;
    for (size_t i = 0; i < model.profiles.size(); ++i) {
      const MigProfile& p = model.profiles[i];
      SCOPED_TRACE(p.name);
      EXPECT_TRUE(seen.insert(p.name).second) << "duplicate";
      EXPECT_EQ(p.name.substr(0, p.name.find('g')), std::to_string(p.compute_slices));
      EXPECT_EQ(p.media, p.name.ends_with("+me"));
      EXPECT_GE(p.compute_slices, 1u);
      EXPECT_LE(p.compute_slices, model.compute_slices);
      EXPECT_GE(p.memory_slices, 1u);
      EXPECT_GT(p.memory_mib, 0u);
      ASSERT_FALSE(p.starts.empty());
      EXPECT_TRUE(std::is_sorted(p.starts.begin(), p.starts.end()));
      for (uint32_t s : p.starts) EXPECT_LE(s + p.memory_slices, model.memory_slices) << s;
      whole = whole || (p.compute_slices == model.compute_slices && p.memory_slices == model.memory_slices);
      if (i > 0) {
        const MigProfile& q = model.profiles[i - 1];
        EXPECT_TRUE(q.memory_mib < p.memory_mib ||
                    (q.memory_mib == p.memory_mib && q.compute_slices <= p.compute_slices))
            << "not smallest first after " << q.name;
      }
      // Each instance of a profile alone is a valid layout.
      for (uint32_t s : p.starts) EXPECT_EQ(CheckMigLayout(model, {{p.name, s}}), std::nullopt);
    }
    EXPECT_TRUE(whole) << "no whole-GPU profile";
  }
}

TEST(MigModelTest, ProfilesHaveNvidiaGeometryAndMemory) {
  struct Case {
    std::string_view model, profile;
    uint32_t compute, memory_slices;
    uint64_t memory_mib;
    std::vector<uint32_t> starts;
  };
  const Case cases[] = {
      {"A30-24GB", "1g.6gb", 1, 1, 5952, {0, 1, 2, 3}},
      {"A30-24GB", "2g.12gb", 2, 2, 11968, {0, 2}},
      {"A30-24GB", "4g.24gb", 4, 4, 24000, {0}},
      {"A100-40GB", "1g.5gb", 1, 1, 4864, {0, 1, 2, 3, 4, 5, 6}},
      {"A100-40GB", "1g.10gb", 1, 2, 9856, {0, 2, 4, 6}},
      {"A100-40GB", "2g.10gb", 2, 2, 9856, {0, 2, 4}},
      {"A100-40GB", "3g.20gb", 3, 4, 19968, {0, 4}},
      {"A100-40GB", "4g.20gb", 4, 4, 19968, {0}},
      {"A100-40GB", "7g.40gb", 7, 8, 40192, {0}},
      {"A100-80GB", "1g.10gb", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}},
      {"A100-80GB", "1g.20gb", 1, 2, 19968, {0, 2, 4, 6}},
      {"A100-80GB", "2g.20gb", 2, 2, 19968, {0, 2, 4}},
      {"A100-80GB", "3g.40gb", 3, 4, 40192, {0, 4}},
      {"A100-80GB", "4g.40gb", 4, 4, 40192, {0}},
      {"A100-80GB", "7g.80gb", 7, 8, 80896, {0}},
      {"A100-80GB", "1g.10gb+me", 1, 1, 9728, {0, 1, 2, 3, 4, 5, 6}},
      {"H100-80GB", "1g.10gb", 1, 1, 9984, {0, 1, 2, 3, 4, 5, 6}},
      {"H100-80GB", "7g.80gb", 7, 8, 81152, {0}},
      {"H100-94GB", "3g.47gb", 3, 4, 47232, {0, 4}},
      {"H100-96GB", "1g.24gb", 1, 2, 23552, {0, 2, 4, 6}},
      {"H200-141GB", "1g.18gb", 1, 1, 16384, {0, 1, 2, 3, 4, 5, 6}},
      {"H200-141GB", "1g.35gb", 1, 2, 33280, {0, 2, 4, 6}},
      {"H200-141GB", "2g.35gb", 2, 2, 33280, {0, 2, 4}},
      {"H200-141GB", "7g.141gb", 7, 8, 143360, {0}},
      {"H20-96GB", "3g.48gb", 3, 4, 47616, {0, 4}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + std::string(c.profile));
    const MigProfile& p = Profile(Model(c.model), c.profile);
    EXPECT_EQ(p.compute_slices, c.compute);
    EXPECT_EQ(p.memory_slices, c.memory_slices);
    EXPECT_EQ(p.memory_mib, c.memory_mib);
    EXPECT_EQ(p.starts, c.starts);
  }
}

TEST(MigModelTest, FindsProfilesByTheirSpellings) {
  const MigModel& a100 = Model("A100-80GB");
  for (std::string_view name : {"1g.10gb", "MIG 1g.10gb", "mig-1g.10gb", "1G.10GB", " 1g.10gb "}) {
    const MigProfile* p = FindProfile(a100, name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name, "1g.10gb");
  }
  EXPECT_EQ(FindProfile(a100, "1g.10gb+me")->name, "1g.10gb+me");
  for (std::string_view name : {"", "mig-", "1g.5gb", "1g.11gb", "3g.20gb", "auto", "1g"}) {
    EXPECT_EQ(FindProfile(a100, name), nullptr) << name;
  }
}

TEST(MigModelTest, ComputeShareRoundsDown) {
  const MigModel& a100 = Model("A100-80GB");
  EXPECT_EQ(MigComputePct(a100, Profile(a100, "1g.10gb")), 14u);
  EXPECT_EQ(MigComputePct(a100, Profile(a100, "2g.20gb")), 28u);
  EXPECT_EQ(MigComputePct(a100, Profile(a100, "3g.40gb")), 42u);
  EXPECT_EQ(MigComputePct(a100, Profile(a100, "4g.40gb")), 57u);
  EXPECT_EQ(MigComputePct(a100, Profile(a100, "7g.80gb")), 100u);
  const MigModel& a30 = Model("A30-24GB");
  EXPECT_EQ(MigComputePct(a30, Profile(a30, "1g.6gb")), 25u);
  EXPECT_EQ(MigComputePct(MigModel{.compute_slices = 0}, Profile(a30, "1g.6gb")), 0u);
}

// ---------------------------------------------------------------------------
// Placement

TEST(MigPlacementTest, SevenOneSliceInstancesFitAndAnEighthDoesNot) {
  for (const auto& name : MigModelNames()) {
    SCOPED_TRACE(name);
    const MigModel& model = Model(name);
    const MigProfile& smallest = model.profiles.front();
    std::vector<MigInstance> used;
    for (uint32_t i = 0; i < model.compute_slices; ++i) {
      auto start = FindMigStart(model, smallest, used);
      ASSERT_TRUE(start.has_value()) << "instance " << i;
      EXPECT_EQ(*start, i);  // lowest free start
      used.push_back({smallest.name, *start});
    }
    EXPECT_EQ(FindMigStart(model, smallest, used), std::nullopt);
    EXPECT_EQ(CheckMigLayout(model, used), std::nullopt);
    EXPECT_EQ(BestFitMig(model, 0, 0, used), std::nullopt);
  }
}

TEST(MigPlacementTest, FourAndThreeFillTheGpu) {
  const std::vector<MigInstance> used = {{"4g.40gb", 0}, {"3g.40gb", 4}};
  EXPECT_EQ(CheckMigLayout(Model("A100-80GB"), used), std::nullopt);
  for (const auto& p : Model("A100-80GB").profiles) {
    EXPECT_EQ(FindMigStart(Model("A100-80GB"), p, used), std::nullopt) << p.name;
  }
}

TEST(MigPlacementTest, StartsFollowWhatIsTaken) {
  struct Case {
    std::string_view model, profile;
    std::vector<MigInstance> used;
    std::optional<uint32_t> want;
  };
  const Case cases[] = {
      // A 3g after a 4g goes to 4; a second 4g goes nowhere.
      {"A100-80GB", "3g.40gb", {{"4g.40gb", 0}}, 4},
      {"A100-80GB", "4g.40gb", {{"3g.40gb", 4}}, 0},
      {"A100-80GB", "4g.40gb", {{"4g.40gb", 0}}, std::nullopt},
      {"A100-80GB", "4g.40gb", {{"1g.10gb", 5}}, 0},
      {"A100-80GB", "4g.40gb", {{"1g.10gb", 3}}, std::nullopt},
      {"A100-80GB", "7g.80gb", {}, 0},
      {"A100-80GB", "7g.80gb", {{"1g.10gb", 6}}, std::nullopt},
      // 2g: only at 0, 2 and 4.
      {"A100-80GB", "2g.20gb", {}, 0},
      {"A100-80GB", "2g.20gb", {{"2g.20gb", 0}}, 2},
      {"A100-80GB", "2g.20gb", {{"2g.20gb", 0}, {"2g.20gb", 2}}, 4},
      {"A100-80GB", "2g.20gb", {{"2g.20gb", 0}, {"2g.20gb", 2}, {"2g.20gb", 4}}, std::nullopt},
      {"A100-80GB", "2g.20gb", {{"1g.10gb", 1}}, 2},
      {"A100-80GB", "2g.20gb", {{"3g.40gb", 0}}, 4},
      {"A100-80GB", "2g.20gb", {{"3g.40gb", 0}, {"1g.10gb", 5}}, std::nullopt},  // 6-7 is free, but no 2g at 6
      {"A100-80GB", "1g.20gb", {{"3g.40gb", 0}, {"1g.10gb", 5}}, 6},          // a 1g.20gb may start at 6
      // Two-slice 1g: even starts only.
      {"A100-40GB", "1g.10gb", {{"1g.5gb", 0}}, 2},
      {"A100-40GB", "1g.10gb", {{"1g.5gb", 0}, {"1g.5gb", 3}, {"1g.5gb", 5}}, 6},
      {"A100-40GB", "1g.10gb", {{"1g.5gb", 0}, {"1g.5gb", 3}, {"1g.5gb", 5}, {"1g.5gb", 6}}, std::nullopt},
      // A30: four slices.
      {"A30-24GB", "2g.12gb", {{"1g.6gb", 1}}, 2},
      {"A30-24GB", "4g.24gb", {{"1g.6gb", 3}}, std::nullopt},
      // One media-extension instance per GPU.
      {"A100-80GB", "1g.10gb+me", {{"1g.10gb", 0}}, 1},
      {"A100-80GB", "1g.10gb+me", {{"1g.10gb+me", 0}}, std::nullopt},
      // An instance of a profile the model does not have: nothing is safe.
      {"A100-80GB", "1g.10gb", {{"9g.90gb", 0}}, std::nullopt},
  };
  for (const auto& c : cases) {
    std::string trace = std::string(c.model) + " " + std::string(c.profile) + " next to";
    for (const auto& u : c.used) trace += " " + u.profile + "@" + std::to_string(u.start);
    SCOPED_TRACE(trace);
    EXPECT_EQ(StartFor(c.model, c.profile, c.used), c.want);
  }
}

TEST(MigPlacementTest, MemorySlicesRunOutBeforeComputeSlices) {
  // Four 1g.10gb take all eight memory slices of an A100-40GB but only four of
  // its seven compute slices: nothing else fits.
  const MigModel& model = Model("A100-40GB");
  std::vector<MigInstance> used;
  for (uint32_t want : {0u, 2u, 4u, 6u}) {
    auto start = FindMigStart(model, Profile(model, "1g.10gb"), used);
    ASSERT_EQ(start, want);
    used.push_back({"1g.10gb", *start});
  }
  EXPECT_EQ(CheckMigLayout(model, used), std::nullopt);
  for (const auto& p : model.profiles) EXPECT_EQ(FindMigStart(model, p, used), std::nullopt) << p.name;
}

TEST(MigPlacementTest, ComputeSlicesLimitEvenWithMemoryFree) {
  const MigModel model = TinyModel();  // 2 compute, 4 memory slices
  const MigProfile& p = model.profiles[1];
  std::vector<MigInstance> used = {{p.name, 0}, {p.name, 1}};
  EXPECT_EQ(FindMigStart(model, p, used), std::nullopt);
  EXPECT_EQ(BestFitMig(model, 0, 0, used), std::nullopt);
  used.push_back({p.name, 2});
  const auto problem = CheckMigLayout(model, used);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(*problem, "instance 2 (1g.2gb at 2): 3 compute slices in use, the GPU has 2");
}

// ---------------------------------------------------------------------------
// Best fit

TEST(MigBestFitTest, PicksTheSmallestProfileThatHoldsTheRequest) {
  struct Case {
    std::string_view model;
    uint64_t memory_mib;
    uint32_t compute_pct;
    std::vector<MigInstance> used;
    std::string_view want;  // "" = none
    uint32_t start = 0;
  };
  const Case cases[] = {
      {"A100-80GB", 0, 0, {}, "1g.10gb", 0},
      {"A100-80GB", 9000, 0, {}, "1g.10gb", 0},
      {"A100-80GB", 9728, 0, {}, "1g.10gb", 0},
      {"A100-80GB", 9729, 0, {}, "1g.20gb", 0},
      {"A100-80GB", 15000, 0, {}, "1g.20gb", 0},
      {"A100-80GB", 15000, 20, {}, "2g.20gb", 0},
      {"A100-80GB", 20000, 0, {}, "3g.40gb", 0},
      {"A100-80GB", 0, 30, {}, "3g.40gb", 0},
      {"A100-80GB", 0, 42, {}, "3g.40gb", 0},
      {"A100-80GB", 0, 43, {}, "4g.40gb", 0},
      {"A100-80GB", 0, 60, {}, "7g.80gb", 0},
      {"A100-80GB", 0, 100, {}, "7g.80gb", 0},
      {"A100-80GB", 40192, 0, {}, "3g.40gb", 0},
      {"A100-80GB", 40193, 0, {}, "7g.80gb", 0},
      {"A100-80GB", 80897, 0, {}, ""},
      {"A100-80GB", 0, 101, {}, ""},
      {"A100-40GB", 4000, 0, {}, "1g.5gb", 0},
      {"A100-40GB", 9000, 0, {}, "1g.10gb", 0},
      {"H100-80GB", 10000, 0, {}, "1g.20gb", 0},  // H100's 1g.10gb holds 9984 MiB
      {"A30-24GB", 0, 30, {}, "2g.12gb", 0},
      {"H200-141GB", 20000, 0, {}, "1g.35gb", 0},
      // Next to what is there.
      {"A100-80GB", 9000, 0, {{"1g.10gb", 0}, {"1g.10gb", 1}}, "1g.10gb", 2},
      {"A100-80GB", 15000, 0, {{"1g.10gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 4}}, "1g.20gb", 6},
      {"A100-80GB", 0, 30, {{"4g.40gb", 0}}, "3g.40gb", 4},
      {"A100-80GB", 0, 30, {{"3g.40gb", 4}}, "3g.40gb", 0},
      {"A100-80GB", 0, 50, {{"3g.40gb", 4}}, "4g.40gb", 0},
      {"A100-80GB", 0, 50, {{"1g.10gb", 0}}, ""},
      {"A100-80GB", 0, 0, {{"7g.80gb", 0}}, ""},
      {"A100-80GB", 15000, 0, {{"1g.10gb", 1}, {"1g.10gb", 3}, {"1g.10gb", 5}, {"1g.10gb", 6}}, ""},
  };
  for (const auto& c : cases) {
    std::string trace = std::string(c.model) + " " + std::to_string(c.memory_mib) + " MiB " +
                        std::to_string(c.compute_pct) + " % next to";
    for (const auto& u : c.used) trace += " " + u.profile + "@" + std::to_string(u.start);
    SCOPED_TRACE(trace);
    const auto choice = BestFitMig(Model(c.model), c.memory_mib, c.compute_pct, c.used);
    if (c.want.empty()) {
      EXPECT_EQ(choice.has_value(), false) << choice->profile->name;
      continue;
    }
    ASSERT_TRUE(choice.has_value());
    EXPECT_EQ(choice->profile->name, c.want);
    EXPECT_EQ(choice->start, c.start);
  }
}

TEST(MigBestFitTest, SkipsAProfileThatNoLongerFitsForTheNext) {
  // On the made-up part the smallest profile has one start only; once it is
  // taken the request goes to the next profile that holds it.
  const MigModel model = TinyModel();
  auto first = BestFitMig(model, 1000, 0, {});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->profile->name, "1g.1gb");
  EXPECT_EQ(first->start, 0u);
  auto second = BestFitMig(model, 1000, 0, {{"1g.1gb", 0}});
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->profile->name, "1g.2gb");
  EXPECT_EQ(second->start, 1u);
}

TEST(MigBestFitTest, NeverPicksMediaExtensionProfiles) {
  for (const auto& name : MigModelNames()) {
    const MigModel& model = Model(name);
    for (const auto& p : model.profiles) {
      auto choice = BestFitMig(model, p.memory_mib, MigComputePct(model, p), {});
      ASSERT_TRUE(choice.has_value()) << name << " " << p.name;
      EXPECT_FALSE(choice->profile->media) << name << " " << p.name;
    }
  }
}

// ---------------------------------------------------------------------------
// Whole layouts

TEST(MigLayoutTest, AcceptsLayoutsTheHardwareAllows) {
  struct Case {
    std::string_view model;
    std::vector<MigInstance> layout;
  };
  const Case cases[] = {
      {"A100-80GB", {}},
      {"A100-80GB", {{"7g.80gb", 0}}},
      {"A100-80GB", {{"4g.40gb", 0}, {"3g.40gb", 4}}},
      {"A100-80GB", {{"3g.40gb", 0}, {"3g.40gb", 4}}},
      {"A100-80GB", {{"2g.20gb", 0}, {"2g.20gb", 2}, {"2g.20gb", 4}, {"1g.10gb", 6}}},
      {"A100-80GB", {{"1g.20gb", 6}, {"1g.20gb", 0}, {"2g.20gb", 2}, {"1g.10gb", 4}, {"1g.10gb", 5}}},
      {"A100-80GB", {{"1g.10gb+me", 3}, {"1g.10gb", 0}, {"3g.40gb", 4}}},
      {"A100-40GB", {{"1g.10gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 4}, {"1g.10gb", 6}}},
      {"A100-40GB", {{"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}}},
      {"A30-24GB", {{"2g.12gb", 0}, {"1g.6gb", 2}, {"1g.6gb", 3}}},
      {"A30-24GB", {{"4g.24gb", 0}}},
      {"H200-141GB", {{"3g.71gb", 0}, {"1g.35gb", 4}, {"1g.18gb", 6}}},
      {"H100-94GB", {{"1g.12gb+me", 0}, {"1g.24gb", 2}, {"2g.24gb", 4}, {"1g.12gb", 6}}},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    const auto& c = cases[i];
    const auto problem = CheckMigLayout(Model(c.model), c.layout);
    EXPECT_EQ(problem, std::nullopt) << c.model << " case " << i << ": " << *problem;
  }
}

TEST(MigLayoutTest, RejectsLayoutsWithAReadableReason) {
  struct Case {
    std::string_view model;
    std::vector<MigInstance> layout;
    std::string_view want;
  };
  const Case cases[] = {
      {"A100-80GB",
       {{"1g.10gb", 0}, {"1g.10gb", 1}, {"3g.40gb", 2}},
       "instance 2 (3g.40gb at 2): start not allowed (0, 4)"},
      {"A100-80GB", {{"4g.40gb", 4}}, "instance 0 (4g.40gb at 4): start not allowed (0)"},
      {"A100-80GB", {{"1g.10gb", 7}}, "instance 0 (1g.10gb at 7): start not allowed (0, 1, 2, 3, 4, 5, 6)"},
      {"A100-80GB", {{"1g.20gb", 1}}, "instance 0 (1g.20gb at 1): start not allowed (0, 2, 4, 6)"},
      {"A100-80GB",
       {{"4g.40gb", 0}, {"3g.40gb", 0}},
       "instance 1 (3g.40gb at 0): memory slices 0-3 overlap instance 0 (4g.40gb at 0)"},
      {"A100-80GB",
       {{"2g.20gb", 2}, {"1g.10gb", 0}, {"1g.10gb", 3}},
       "instance 2 (1g.10gb at 3): memory slice 3 overlaps instance 0 (2g.20gb at 2)"},
      {"A100-80GB",
       {{"1g.10gb", 0}, {"1g.10gb", 0}},
       "instance 1 (1g.10gb at 0): memory slice 0 overlaps instance 0 (1g.10gb at 0)"},
      {"A100-80GB",
       {{"1g.10gb", 6}, {"7g.80gb", 0}},
       "instance 1 (7g.80gb at 0): memory slices 0-7 overlap instance 0 (1g.10gb at 6)"},
      {"A100-80GB", {{"5g.50gb", 0}}, "instance 0 (5g.50gb at 0): unknown profile on A100-80GB"},
      {"A100-80GB", {{"7g.80gb", 0}, {"1g.5gb", 0}}, "instance 1 (1g.5gb at 0): unknown profile on A100-80GB"},
      {"A100-40GB", {{"1g.10gb", 0}, {"3g.40gb", 4}}, "instance 1 (3g.40gb at 4): unknown profile on A100-40GB"},
      {"A100-80GB",
       {{"1g.10gb+me", 0}, {"1g.10gb+me", 1}},
       "instance 1 (1g.10gb+me at 1): a second media-extension instance after instance 0 (1g.10gb+me at 0)"},
      {"A30-24GB", {{"2g.12gb", 1}}, "instance 0 (2g.12gb at 1): start not allowed (0, 2)"},
  };
  for (const auto& c : cases) {
    const auto problem = CheckMigLayout(Model(c.model), c.layout);
    ASSERT_TRUE(problem.has_value()) << c.want;
    EXPECT_EQ(*problem, c.want);
  }
}

// ---------------------------------------------------------------------------
// Property: any sequence of best-fit placements and removals keeps a layout
// the hardware allows, with no overlap, and each choice is the first
// eligible profile at its lowest free start.

// The lowest allowed start where CheckMigLayout accepts `p` next to `used`:
// an oracle for FindMigStart built only from the layout check.
std::optional<uint32_t> OracleStart(const MigModel& model, const MigProfile& p, std::vector<MigInstance> used) {
  used.push_back({p.name, 0});
  for (uint32_t s : p.starts) {
    used.back().start = s;
    if (!CheckMigLayout(model, used)) return s;
  }
  return std::nullopt;
}

bool Eligible(const MigModel& model, const MigProfile& p, uint64_t memory_mib, uint32_t compute_pct) {
  return !p.media && p.memory_mib >= memory_mib && MigComputePct(model, p) >= compute_pct;
}

void ExpectNoOverlap(const MigModel& model, const std::vector<MigInstance>& used) {
  std::vector<int> taken(model.memory_slices, 0);
  uint32_t compute = 0;
  for (const auto& u : used) {
    const MigProfile* p = FindProfile(model, u.profile);
    ASSERT_NE(p, nullptr);
    compute += p->compute_slices;
    for (uint32_t s = u.start; s < u.start + p->memory_slices; ++s) {
      ASSERT_LT(s, model.memory_slices);
      EXPECT_EQ(++taken[s], 1) << "memory slice " << s << " taken twice";
    }
  }
  EXPECT_LE(compute, model.compute_slices);
}

TEST(MigPropertyTest, BestFitSequencesKeepValidLayouts) {
  constexpr uint64_t kSeeds = 200;
  constexpr int kSteps = 40;
  size_t placed = 0, refused = 0;
  for (const auto& name : MigModelNames()) {
    const MigModel& model = Model(name);
    const uint64_t max_memory = model.profiles.back().memory_mib;
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      Lcg rng(seed);
      std::vector<MigInstance> used;
      for (int step = 0; step < kSteps; ++step) {
        SCOPED_TRACE(name + " seed " + std::to_string(seed) + " step " + std::to_string(step));
        if (!used.empty() && rng.Percent(30)) {
          used.erase(used.begin() + static_cast<std::ptrdiff_t>(rng.Below(used.size())));
          continue;
        }
        const uint64_t memory = rng.Percent(20) ? 0 : rng.Below(max_memory + max_memory / 8);
        const uint32_t pct = rng.Percent(50) ? 0 : static_cast<uint32_t>(rng.Below(101));
        const auto choice = BestFitMig(model, memory, pct, used);
        // The first eligible profile that the oracle can place is the answer.
        const MigProfile* want = nullptr;
        std::optional<uint32_t> want_start;
        for (const auto& p : model.profiles) {
          if (!Eligible(model, p, memory, pct)) continue;
          want_start = OracleStart(model, p, used);
          if (want_start) {
            want = &p;
            break;
          }
        }
        if (want == nullptr) {
          ASSERT_FALSE(choice.has_value()) << choice->profile->name;
          ++refused;
          continue;
        }
        ASSERT_TRUE(choice.has_value()) << want->name;
        ASSERT_EQ(choice->profile, want);
        ASSERT_EQ(choice->start, *want_start);
        ASSERT_EQ(FindMigStart(model, *choice->profile, used), want_start);
        used.push_back({choice->profile->name, choice->start});
        ++placed;
        const auto problem = CheckMigLayout(model, used);
        ASSERT_EQ(problem, std::nullopt) << *problem;
        ExpectNoOverlap(model, used);
      }
    }
  }
  // The sequences exercised both outcomes, not just one.
  EXPECT_GT(placed, 1000u);
  EXPECT_GT(refused, 1000u);
}

// FindMigStart agrees with the layout check for every profile, including
// media ones, on random valid layouts.
TEST(MigPropertyTest, FindMigStartMatchesTheLayoutCheck) {
  for (const auto& name : MigModelNames()) {
    const MigModel& model = Model(name);
    for (uint64_t seed = 1; seed <= 100; ++seed) {
      Lcg rng(seed);
      std::vector<MigInstance> used;
      for (int step = 0; step < 12; ++step) {
        // Grow a random valid layout one random profile at a time.
        const MigProfile& p = model.profiles[rng.Below(model.profiles.size())];
        const auto start = FindMigStart(model, p, used);
        ASSERT_EQ(start, OracleStart(model, p, used)) << name << " seed " << seed << " " << p.name;
        if (start) used.push_back({p.name, *start});
      }
      ASSERT_EQ(CheckMigLayout(model, used), std::nullopt) << name << " seed " << seed;
    }
  }
}

}  // namespace
}  // namespace gpool::topology
