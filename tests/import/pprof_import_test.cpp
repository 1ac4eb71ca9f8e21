// pprof memory profiles (JAX's device_memory_profile) written here by a
// small protobuf encoder, field by field as profile.proto numbers them:
// the mapping worked by hand, and damaged or foreign profiles refused with
// the byte or field named, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "import/byte_source.h"
#include "import_test_util.h"
#include "loupe/prof/analysis.h"
#include "profiler/test_files.h"

namespace loupe::prof {
namespace {

// Protocol Buffers' encoding, as much as a profile needs.
std::string varint(uint64_t v) {
  std::string out;
  do {
    out += char((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return out;
}
std::string key(uint32_t field, int wire) { return varint(uint64_t(field) << 3 | uint64_t(wire)); }
std::string num(uint32_t field, uint64_t v) { return key(field, 0) + varint(v); }
std::string msg(uint32_t field, const std::string& bytes) { return key(field, 2) + varint(bytes.size()) + bytes; }
std::string packed(uint32_t field, const std::vector<uint64_t>& vs) {
  std::string body;
  for (uint64_t v : vs) body += varint(v);
  return msg(field, body);
}

// A profile as JAX writes one, its strings at fixed indices.
struct ProfileWriter {
  std::vector<std::string> strings{"",     "allocations", "count",      "space", "bytes",
                                   "kind", "buffer",      "executable", "device"};
  std::string body;
  uint64_t s(const std::string& text) {
    for (size_t i = 0; i < strings.size(); ++i)
      if (strings[i] == text) return i;
    strings.push_back(text);
    return strings.size() - 1;
  }
  void memory_types() {
    body += msg(1, num(1, 1) + num(2, 2));  // allocations / count
    body += msg(1, num(1, 3) + num(2, 4));  // space / bytes
  }
  void function(uint64_t id, const std::string& name, const std::string& file) {
    body += msg(5, num(1, id) + num(2, s(name)) + num(3, s(name)) + num(4, s(file)));
  }
  void location(uint64_t id, uint64_t function, int64_t line) {
    body += msg(4, num(1, id) + msg(4, num(1, function) + num(2, uint64_t(line))));
  }
  void sample(const std::vector<uint64_t>& locations, uint64_t count, uint64_t bytes, const std::string& kind,
              const std::string& device) {
    body += msg(2, packed(1, locations) + packed(2, {count, bytes}) + msg(3, num(1, 5) + num(2, s(kind))) +
                       msg(3, num(1, 8) + num(2, s(device))));
  }
  std::string bytes() const {
    std::string out = body;
    for (const std::string& t : strings) out += msg(6, t);
    return out + num(9, 1'700'000'000'000'000'000);
  }
  // Where each top-level field of bytes() ends: a message cut there is
  // whole by the wire format's rules, which mark no end.
  std::vector<size_t> field_ends() const {
    std::vector<size_t> ends;
    std::string out = bytes();
    size_t at = 0;
    while (at < out.size()) {
      uint64_t k = 0, shift = 0, n = 0;
      do k |= uint64_t(out[at] & 0x7f) << shift, shift += 7;
      while (uint8_t(out[at++]) & 0x80);
      if ((k & 7) == 2) {
        shift = 0;
        do n |= uint64_t(out[at] & 0x7f) << shift, shift += 7;
        while (uint8_t(out[at++]) & 0x80);
        at += n;
      } else {
        while (uint8_t(out[at++]) & 0x80) {
        }
      }
      ends.push_back(at);
    }
    return ends;
  }
};

// train.py: line 7 in step() makes two 100 B buffers on cuda:0 (through
// jax/_src/array.py, a library frame, innermost); line 9 in step(), called
// from main() at line 3, one 50 B buffer on cuda:1; a compiled program of
// 4 KiB on cuda:0 is device code, not a buffer.
ProfileWriter train_profile() {
  ProfileWriter p;
  p.memory_types();
  p.function(1, "_new", "/usr/lib/python3/site-packages/jax/_src/array.py");
  p.function(2, "step", "train.py");
  p.function(3, "main", "train.py");
  p.location(1, 1, 300);
  p.location(2, 2, 7);
  p.location(3, 2, 9);
  p.location(4, 3, 3);
  p.sample({1, 2, 4}, 2, 200, "buffer", "cuda:0");
  p.sample({3, 4}, 1, 50, "buffer", "cuda:1");
  p.sample({2, 4}, 1, 4096, "executable", "cuda:0");
  return p;
}

class PprofImport : public ::testing::Test {
 protected:
  test::TempDir dir_;
  TraceModel import(const std::string& bytes, ImportResult* r = nullptr) {
    test::write_gzip(dir_.file("memory.prof"), bytes);
    return test::import_and_load(dir_.file("memory.prof"), dir_.file("out.db"), ImportFormat::auto_detect, r);
  }
  std::string refusal(const std::string& bytes, ImportFormat format = ImportFormat::pprof_memory) {
    test::write_text(dir_.file("bad.prof"), bytes);
    try {
      import_trace(dir_.file("bad.prof"), dir_.file("bad.db"), {.format = format});
    } catch (const ImportError& e) {
      return e.what();
    }
    return "imported";
  }
};

std::string stack(const TraceModel& m, uint32_t site) {
  std::string out;
  for (const CallSite* c = m.callsite(site); c; c = c->parent ? m.callsite(c->parent) : nullptr)
    out += (out.empty() ? "" : " < ") + m.str(c->file) + ":" + std::to_string(c->line);
  return out;
}

TEST_F(PprofImport, EachBufferIsABlockAtTheMomentWithItsStack) {
  ImportResult r;
  TraceModel m = import(train_profile().bytes(), &r);
  EXPECT_EQ(r.format, ImportFormat::pprof_memory);
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[0].name, "cuda:0");
  EXPECT_EQ(m.devices[0].kind, DeviceKind::cuda);
  EXPECT_EQ(m.devices[1].id, 1u);
  ASSERT_EQ(m.memory.size(), 2u);
  const MemoryEvents& d0 = m.memory[0];
  ASSERT_EQ(d0.size(), 2u);  // two buffers of 100 B: the count's blocks of one size
  EXPECT_EQ(d0.bytes, (std::vector<int64_t>{100, 100}));
  EXPECT_EQ(d0.allocated, (std::vector<int64_t>{100, 200}));
  EXPECT_NE(d0.address[0], d0.address[1]);
  EXPECT_EQ(stack(m, d0.callsite[0]), "train.py:7 < train.py:3");  // the library frame left out
  const MemoryEvents& d1 = m.memory[1];
  ASSERT_EQ(d1.size(), 1u);
  EXPECT_EQ(stack(m, d1.callsite[0]), "train.py:9 < train.py:3");
  EXPECT_EQ(m.info.meta.at(kMetaMemoryOneMoment), "0,1");
  EXPECT_EQ(r.skipped_by_kind.at("compiled programs' device code (kind executable), not buffers"), 1u);
}

TEST_F(PprofImport, TheMemoryFindingIsOfOneMoment) {
  TraceModel m = import(train_profile().bytes());
  AnalysisReport report = analyze(m, {.rules = {"memory"}});
  ASSERT_EQ(report.findings.size(), 2u);
  EXPECT_EQ(report.findings[0].title, "device 0 (cuda:0): 200 B live when the memory profile was taken");
}

// A cut inside a field is damage the reader names; a cut between fields
// leaves a message the wire format calls whole, refused only when what is
// left names a string, a location or a function it lost. A gzipped file
// (as JAX saves one) says its own end, so any cut of it is refused.
TEST_F(PprofImport, DamageIsNamedNeverACrash) {
  ProfileWriter writer = train_profile();
  std::string good = writer.bytes();
  std::vector<size_t> ends = writer.field_ends();
  for (size_t cut = 1; cut < good.size(); ++cut) {
    if (std::find(ends.begin(), ends.end(), cut) != ends.end()) continue;
    std::string why = refusal(good.substr(0, cut));
    EXPECT_NE(why.find("pprof"), std::string::npos) << "cut at " << cut << ": " << why;
  }
  test::write_gzip(dir_.file("whole.prof"), good);
  std::string gz;
  {
    std::ifstream f(dir_.file("whole.prof"), std::ios::binary);
    gz.assign(std::istreambuf_iterator<char>(f), {});
  }
  for (size_t cut = 10; cut < gz.size(); cut += 5) EXPECT_NE(refusal(gz.substr(0, cut)), "imported") << cut;
  EXPECT_NE(refusal(good + key(3, 3)).find("wire type 3"), std::string::npos);
  EXPECT_NE(refusal(good + key(2, 0) + std::string(11, char(0xff))).find("longer than 10 bytes"), std::string::npos);
  EXPECT_NE(refusal(good + msg(2, packed(1, {99}) + packed(2, {1, 8}))).find("location 99"), std::string::npos);
}

TEST_F(PprofImport, AProfileNotOfMemoryIsRefusedSayingWhatItIs) {
  ProfileWriter cpu;
  cpu.strings = {"", "samples", "count", "cpu", "nanoseconds"};
  cpu.body = msg(1, num(1, 1) + num(2, 2)) + msg(1, num(1, 3) + num(2, 4));
  EXPECT_NE(refusal(cpu.bytes()).find("not of memory: its values are samples/count, cpu/nanoseconds"),
            std::string::npos);
}

TEST_F(PprofImport, SizesPastTwoToTheSixtyTwoAreCountedNotImported) {
  ProfileWriter p = train_profile();
  p.sample({2}, 1, uint64_t(1) << 63, "buffer", "cuda:0");
  ImportResult r;
  TraceModel m = import(p.bytes(), &r);
  EXPECT_EQ(m.memory[0].size(), 2u);
  EXPECT_EQ(r.skipped_by_kind.at("samples whose bytes are negative or past 2^62"), 1u);
}

// A count of 2^40 blocks in a few bytes is one block of its bytes, not a
// trillion events; 3 blocks in 10 B cannot be of one size either.
TEST_F(PprofImport, CountsThatCannotBeBlocksOfOneSizeAreOneBlock) {
  ProfileWriter p;
  p.memory_types();
  p.function(1, "f", "train.py");
  p.location(1, 1, 5);
  p.sample({1}, uint64_t(1) << 40, uint64_t(1) << 40, "buffer", "cuda:0");
  p.sample({1}, 3, 10, "buffer", "cuda:0");
  TraceModel m = import(p.bytes());
  ASSERT_EQ(m.memory.size(), 1u);
  EXPECT_EQ(m.memory[0].bytes, (std::vector<int64_t>{int64_t(1) << 40, 10}));
  EXPECT_EQ(m.info.meta.at("pprof_samples_as_one_block"),
            "2 samples, their bytes not count blocks of one size or past 2^24 blocks in all");
}

TEST_F(PprofImport, AStackTenThousandFramesDeepKeepsTheNearest64) {
  ProfileWriter p;
  p.memory_types();
  p.function(1, "f", "deep.py");
  std::vector<uint64_t> locations;
  for (uint64_t k = 1; k <= 10'000; ++k) {
    p.location(k, 1, int64_t(k));
    locations.push_back(k);
  }
  p.sample(locations, 1, 8, "buffer", "TFRT_CPU_0");
  TraceModel m = import(p.bytes());
  ASSERT_EQ(m.memory.size(), 1u);
  EXPECT_EQ(m.devices[0].kind, DeviceKind::cpu);
  size_t depth = 0;
  for (const CallSite* c = m.callsite(m.memory[0].callsite[0]); c; c = c->parent ? m.callsite(c->parent) : nullptr)
    ++depth;
  EXPECT_EQ(depth, 64u);
  EXPECT_EQ(m.callsite(m.memory[0].callsite[0])->line, 1u);  // the leaf
}

}  // namespace
}  // namespace loupe::prof

namespace loupe::prof::import {
namespace {

// A gzip file cut short ends in whatever bytes the cut left, not in its
// trailer: a "size" of 4 GiB - 1 behind 30 bytes of deflate data is no
// hint (a reader once reserved and zeroed it for each such file).
TEST(GzipSizeHint, ACutFileGivesNoHintItCouldNotHold) {
  test::TempDir dir;
  std::string cut =
      std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10) + std::string(26, 'x') + "\xff\xff\xff\xff";
  test::write_text(dir.file("cut.gz"), cut);
  EXPECT_EQ(open_byte_source(dir.file("cut.gz"))->size_hint(), 0u);
}

}  // namespace
}  // namespace loupe::prof::import
