#include "import/json_reader.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "import/event_parser.h"
#include "import/intern_cache.h"
#include "import/json_batch.h"
#include "import/json_values.h"
#include "import/parse_pool.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_format.h"

namespace loupe::prof::import {

namespace {

constexpr size_t kInitialBuffer = size_t(4) << 20;
// Complete events are parsed in runs (batches) of about this many bytes,
// on worker threads when the machine has more than one core.
constexpr uint64_t kBatchBytes = uint64_t(256) << 10;
constexpr size_t kMaxWorkers = 4;
constexpr uint64_t kNoOffset = ~uint64_t(0);
// No event of a real trace comes near this (the largest seen, a PyTorch
// op with its Python stack and input shapes, is tens of kilobytes); one
// larger is damage or an attack (a gigabyte name in a megabyte of gzip),
// and holding it would cost several times its size.
constexpr size_t kMaxEventBytes = size_t(64) << 20;

class JsonReader {
 public:
  JsonReader(ByteSource& source, const std::string& path, StringPool& strings, ChromeTrace& trace, unsigned threads)
      : source_(source), path_(path), strings_(strings), trace_(trace), intern_(strings) {
    workers_ = threads != 0 ? threads : std::min<size_t>(std::thread::hardware_concurrency(), kMaxWorkers);
    allocate(kInitialBuffer);
  }

  void run() {
    try {
      read_document();
    } catch (const ImportError&) {
      // A batch still being parsed may hold an earlier error: the first in
      // the file is the one to report.
      drain();
      throw;
    }
    drain();
  }

 private:
  void read_document() {
    int c = next_nonspace();
    if (c < 0) {
      fail(kNoOffset, trace_.bytes > 0       ? "the JSON document is empty"
                      : source_.compressed() ? "the JSON document is empty (the compressed data holds nothing)"
                                             : "the file is empty");
    }
    if (uint8_t(c) == 0xEF) {  // a UTF-8 byte order mark
      for (uint8_t b : {0xEF, 0xBB, 0xBF}) {
        if (get() != b) fail(offset(), "not JSON: unexpected bytes at the start");
      }
      c = next_nonspace();
    }
    if (c == '[') {
      ++pos_;
      trace_.top_level_array = true;
      read_events();
    } else if (c == '{') {
      ++pos_;
      read_top_object();
    } else if (c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
      fail(offset(),
           "not a trace: the JSON document is a single value, not an object with 'traceEvents' or an "
           "array of events");
    } else {
      fail(offset(),
           "not JSON, nor any other file loupe reads (a loupe trace; Kineto, JAX or Chrome JSON, plain or gzip; "
           "an Nsight Systems SQLite export; a PyTorch memory snapshot; a pprof memory profile)");
    }
    c = next_nonspace();
    if (c > 0) fail(offset(), "unexpected data after the end of the JSON document");
  }

  // ---- batches -------------------------------------------------------------------

  // Copies the complete events scanned so far into a batch and parses it:
  // on the worker threads once there is more than one batch and more than
  // one core, here otherwise.
  void flush_batch() {
    if (batch_count_ == 0) return;
    size_t first = index(batch_first_), end = index(batch_end_);
    Batch* b = take_batch();
    b->offset = batch_first_ - 1;
    b->length = end - first + 2;
    b->bytes.resize(b->length + simdjson::SIMDJSON_PADDING);
    b->bytes[0] = '[';
    std::memcpy(b->bytes.data() + 1, buf_.get() + first, end - first);
    b->bytes[b->length - 1] = ']';
    std::memset(b->bytes.data() + b->length, ' ', simdjson::SIMDJSON_PADDING);
    batch_count_ = 0;
    ++batches_;
    if (!pool_ && batches_ > 1 && workers_ > 1) pool_ = std::make_unique<ParsePool>(workers_);
    if (!pool_) {
      inline_parser_.parse(*b);
      free_.push_back(b);
      merge(*b);
      return;
    }
    pool_->submit(b);
    while (pool_->in_flight() > 2 * workers_) merge_next();  // a bounded number in flight
  }

  Batch* take_batch() {
    if (!free_.empty()) {
      Batch* b = free_.back();
      free_.pop_back();
      return b;
    }
    batches_owned_.push_back(std::make_unique<Batch>());
    return batches_owned_.back().get();
  }

  void merge_next() {
    Batch* b = pool_->next_done();
    if (!b) return;
    free_.push_back(b);
    merge(*b);
  }

  void drain() {
    if (!pool_) return;
    while (pool_->in_flight() > 0) merge_next();
  }

  // The batch's events into the trace, its local ids mapped onto the
  // trace's string table and lanes.
  void merge(Batch& b) {
    if (b.failed) fail(b.error_offset, b.error);
    ids_.resize(b.strings.size());
    for (size_t i = 0; i < b.strings.size(); ++i) ids_[i] = i == 0 ? 0 : intern_(b.strings[i]);
    auto global = [&](LaneId id) { return id.is_string ? LaneId{int64_t(ids_[size_t(id.value)]), true} : id; };
    lane_ids_.resize(b.lanes.size());
    for (size_t i = 0; i < b.lanes.size(); ++i) {
      lane_ids_[i] = trace_.lane(global(b.lanes[i].pid), global(b.lanes[i].tid));
    }
    for (ChromeEvent e : b.events) {
      e.name = ids_[e.name];
      e.cat = ids_[e.cat];
      e.arg_kind = ids_[e.arg_kind];
      e.arg_name = ids_[e.arg_name];
      e.lane = lane_ids_[e.lane];
      if (e.comm != 0) {
        ChromeComm c = b.comms[e.comm - 1];
        c.name = ids_[c.name];
        c.group = ids_[c.group];
        c.dtype = ids_[c.dtype];
        trace_.comms.push_back(c);
        e.comm = uint32_t(trace_.comms.size());
      }
      if (e.awaits != 0) {
        trace_.awaited.push_back(b.awaited[e.awaits - 1]);
        e.awaits = uint32_t(trace_.awaited.size());
      }
      trace_.events.push_back(e);
    }
    for (ChromeCounter c : b.counters) {
      c.name = ids_[c.name];
      c.lane = lane_ids_[c.lane];
      trace_.counters.push_back(c);
    }
    for (const Batch::Meta& m : b.metadata) {
      std::string value(strings_.text(ids_[m.value]));
      switch (m.kind) {
        case Batch::Meta::process_name: trace_.process_names[global(m.pid)] = value; break;
        case Batch::Meta::process_labels: trace_.process_labels[global(m.pid)] = value; break;
        case Batch::Meta::thread_name: trace_.thread_names[trace_.lane(global(m.pid), global(m.tid))] = value; break;
      }
    }
    for (const auto& [why, n] : b.skipped) trace_.skipped[why] += n;
    trace_.total_events += b.total_events;
    trace_.metadata_events += b.metadata_events;
    trace_.begin_end_events += b.begin_end_events;
    trace_.min_ts = std::min(trace_.min_ts, b.min_ts);
  }

  // ---- the buffer ----------------------------------------------------------
  // buf_[0] is never filled by a read: the byte before any kept data is
  // always in the buffer, so a run of events can be framed with '[' there.

  void allocate(size_t cap) {
    // Not value-initialised: pages of the buffer cost nothing until used.
    std::unique_ptr<char[]> next(new char[cap + 1 + simdjson::SIMDJSON_PADDING]);
    if (buf_) std::memcpy(next.get(), buf_.get(), len_);
    buf_ = std::move(next);
    cap_ = cap;
  }

  uint64_t offset() const { return uint64_t(base_ + int64_t(pos_)); }
  size_t index(uint64_t abs) const { return size_t(int64_t(abs) - base_); }

  // Makes pos_ < len_ unless the input is exhausted; false at its end.
  bool fill() {
    if (pos_ < len_) return true;
    if (eof_) return false;
    flush_batch();
    uint64_t keep = in_event_ ? event_start_ : offset();
    size_t k = index(keep);
    if (k > 1) {
      std::memmove(buf_.get() + 1, buf_.get() + k, len_ - k);
      size_t shift = k - 1;
      base_ += int64_t(shift);
      len_ -= shift;
      pos_ -= shift;
    }
    if (len_ == cap_ && cap_ >= kMaxEventBytes) {
      fail(in_event_ ? event_start_ : offset(),
           fmt::format("an event or value larger than {} MiB: no trace holds one that large", kMaxEventBytes >> 20));
    }
    if (len_ == cap_) allocate(cap_ * 2);  // one event larger than the buffer
    size_t got = source_.read(buf_.get() + len_, cap_ - len_);
    if (got == 0) {
      eof_ = true;
      return false;
    }
    len_ += got;
    trace_.bytes += got;
    return true;
  }

  int peek() { return fill() ? uint8_t(buf_[pos_]) : -1; }
  int get() {
    if (!fill()) return -1;
    return uint8_t(buf_[pos_++]);
  }
  int next_nonspace() {
    for (;;) {
      int c = peek();
      if (!is_space(c)) return c;
      ++pos_;
    }
  }

  [[noreturn]] void fail(uint64_t at, std::string_view what) const {
    if (at == kNoOffset) throw ImportError(fmt::format("{}: {}", path_, what));
    throw ImportError(fmt::format("{}: at byte {}: {}", path_, at, what));
  }
  [[noreturn]] void truncated(std::string_view where) const {
    fail(trace_.bytes, fmt::format("truncated JSON: the document ends {}", where));
  }

  // ---- the top level ---------------------------------------------------------

  void read_top_object() {
    bool saw_events = false;
    int c = next_nonspace();
    if (c == '}') {
      ++pos_;
    } else {
      for (;;) {
        if (c < 0) truncated("inside the top-level object");
        if (c != '"') fail(offset(), "expected a member name in the top-level object");
        std::string key = read_plain_string();
        c = next_nonspace();
        if (c < 0) truncated("inside the top-level object");
        if (c != ':') fail(offset(), fmt::format("expected ':' after \"{}\"", key));
        ++pos_;
        c = next_nonspace();
        if (c < 0) truncated("inside the top-level object");
        uint64_t at = offset();
        if (key == "traceEvents") {
          if (c != '[') fail(at, "'traceEvents' is not an array");
          ++pos_;
          read_events();
          saw_events = true;
        } else if (key == "deviceProperties" || key == "baseTimeNanoseconds" || key == "schemaVersion" ||
                   key == "distributedInfo" || key == "host_name") {
          std::string text;
          skip_value(&text);
          top_member(key, text, at);
        } else {
          skip_value(nullptr);
        }
        c = next_nonspace();
        if (c == ',') {
          ++pos_;
          c = next_nonspace();
          continue;
        }
        if (c == '}') {
          ++pos_;
          break;
        }
        if (c < 0) truncated("inside the top-level object");
        fail(offset(), "expected ',' or '}' in the top-level object");
      }
    }
    if (!saw_events) {
      fail(offset(),
           "not a trace: the JSON object has no 'traceEvents' array (expected a Chrome trace: PyTorch "
           "profiler, JAX profiler or another tool's trace-event JSON)");
    }
  }

  // A string at pos_ (which is at its opening quote), unescaped only as far
  // as member names need.
  std::string read_plain_string() {
    ++pos_;
    std::string s;
    for (;;) {
      int c = get();
      if (c < 0) truncated("inside a string");
      if (c == '"') return s;
      if (c == '\\') {
        c = get();
        if (c < 0) truncated("inside a string");
      }
      s.push_back(char(c));
    }
  }

  // Skips the value at pos_, appending its text to `capture` if given.
  void skip_value(std::string* capture) {
    int c = peek();
    uint64_t at = offset();
    auto take = [&](int ch) {
      if (!capture) return;
      if (capture->size() >= kMaxEventBytes) {
        fail(at, fmt::format("a value larger than {} MiB: no trace holds one that large", kMaxEventBytes >> 20));
      }
      capture->push_back(char(ch));
    };
    if (c == '{' || c == '[' || c == '"') {
      int depth = 0;
      bool in_string = false;
      for (;;) {
        int ch = get();
        if (ch < 0) truncated("inside a value of the top-level object");
        take(ch);
        if (in_string) {
          if (ch == '\\') {
            int e = get();
            if (e < 0) truncated("inside a string");
            take(e);
          } else if (ch == '"') {
            in_string = false;
            if (depth == 0) return;
          }
          continue;
        }
        if (ch == '"') {
          in_string = true;
        } else if (ch == '{' || ch == '[') {
          ++depth;
        } else if (ch == '}' || ch == ']') {
          if (--depth == 0) return;
        }
      }
    }
    for (;;) {  // a number or a literal
      int ch = peek();
      if (ch < 0 || ch == ',' || ch == '}' || ch == ']' || is_space(ch)) return;
      take(ch);
      ++pos_;
    }
  }

  // Kineto's distributedInfo: {"backend": "nccl", "rank": 0, "world_size":
  // 2, "pg_config": [...], ...}. The rank and world size must be sane
  // integers; the rest is kept as the text it was.
  ChromeTrace::Distributed distributed_info(od::document& doc, const std::string& text, uint64_t at) {
    if (doc.type() != od::json_type::object) fail(at, "'distributedInfo' is not an object");
    ChromeTrace::Distributed d;
    d.json = text;
    for (auto f : doc.get_object()) {
      od::field field = std::move(f);
      std::string_view k = key_text(field);
      od::value v = field.value();
      if (k == "rank" || k == "world_size") {
        std::optional<int64_t> n = lenient_int(v);
        if (!n || *n < 0 || *n > (int64_t(1) << 24)) fail(at, fmt::format("'distributedInfo' has a bad '{}'", k));
        (k == "rank" ? d.rank : d.world_size) = *n;
      } else if (k == "backend") {
        d.backend = std::string(string_of(v, "backend"));
      }
    }
    if (d.rank != kNone && d.world_size != kNone && d.rank >= d.world_size) {
      fail(at, fmt::format("'distributedInfo' has rank {} of a world of {}", d.rank, d.world_size));
    }
    return d;
  }

  void top_member(const std::string& key, const std::string& text, uint64_t at) {
    simdjson::padded_string json(text);
    od::parser parser;
    try {
      od::document doc = parser.iterate(json);
      if (key == "schemaVersion") {
        trace_.has_schema_version = true;
      } else if (key == "baseTimeNanoseconds") {
        std::optional<int64_t> base = parse_integer(text);
        if (!base) fail(at, "'baseTimeNanoseconds' is not an integer");
        trace_.base_time_ns = *base;
      } else if (key == "distributedInfo") {
        trace_.distributed = distributed_info(doc, text, at);
      } else if (key == "host_name") {
        if (doc.type() != od::json_type::string) fail(at, "'host_name' is not a string");
        trace_.host_name = std::string(std::string_view(doc.get_string()));
      } else if (key == "deviceProperties") {
        od::json_type type = doc.type();
        if (type != od::json_type::array) fail(at, "'deviceProperties' is not an array");
        for (auto element : doc.get_array()) {
          od::object props = element.get_object();
          DeviceRow row;
          bool has_id = false;
          for (auto f : props) {
            od::field field = std::move(f);
            std::string_view k = key_text(field);
            od::value v = field.value();
            if (k == "id") {
              std::optional<int64_t> id = lenient_int(v);
              if (!id || *id < 0 || *id > 0xffff) fail(at, "a deviceProperties entry has a bad 'id'");
              row.id = uint32_t(*id);
              has_id = true;
            } else if (k == "name") {
              row.name = std::string(string_of(v, "name"));
            } else if (k == "totalGlobalMem") {
              row.memory_capacity = lenient_int(v).value_or(0);
            }
          }
          if (!has_id) fail(at, "a deviceProperties entry has no 'id'");
          trace_.device_properties.push_back(std::move(row));
        }
      }
    } catch (const simdjson::simdjson_error& e) {
      fail(at, fmt::format("malformed '{}': {}", key, e.what()));
    } catch (const TypeError& e) {
      fail(at, fmt::format("malformed '{}': {}", key, e.what));
    }
  }

  // ---- the events --------------------------------------------------------------

  // pos_ is just past the array's '['.
  void read_events() {
    int c = next_nonspace();
    if (c < 0) truncated("inside the traceEvents array");
    if (c == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      if (c != '{') fail(offset(), "an element of the events array is not an object");
      event_start_ = offset();
      in_event_ = true;
      if (!scan_object()) truncated(fmt::format("inside the event that starts at byte {}", event_start_));
      in_event_ = false;
      if (batch_count_ == 0) batch_first_ = event_start_;
      batch_end_ = offset();
      ++batch_count_;
      if (batch_end_ - batch_first_ >= kBatchBytes) flush_batch();
      c = next_nonspace();
      if (c == ',') {
        ++pos_;
        c = next_nonspace();
        if (c < 0) truncated("inside the traceEvents array");
        continue;
      }
      if (c == ']') {
        ++pos_;
        flush_batch();
        return;
      }
      if (c < 0) truncated("inside the traceEvents array");
      fail(offset(), "expected ',' or ']' after an event");
    }
  }

  // Advances pos_ past the object that starts at pos_; false if the input
  // ends first. Only strings, escapes and nesting are tracked (simdjson
  // checks the rest when it parses the event): 16 bytes at a time where
  // SSE2 is available, a byte at a time otherwise.
  bool scan_object() {
    int depth = 0;
    bool in_string = false;
    uint64_t skip = kNoOffset;  // the byte at this offset is escaped
    for (;;) {
      if (pos_ >= len_ && !fill()) return false;
      const char* base = buf_.get();
      size_t i = pos_, n = len_;
      auto step = [&](size_t k) {  // true when the object ends at k
        if (uint64_t(base_ + int64_t(k)) == skip) return false;
        char c = base[k];
        if (in_string) {
          if (c == '"') {
            in_string = false;
          } else if (c == '\\') {
            skip = uint64_t(base_ + int64_t(k)) + 1;
          }
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if (c == '}' || c == ']') {
          if (--depth == 0) {
            pos_ = k + 1;
            return true;
          }
        }
        return false;
      };
#if defined(__SSE2__)
      const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
      const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'), fold = _mm_set1_epi8(0x20);
      for (; i + 16 <= n; i += 16) {
        __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + i));
        __m128i folded = _mm_or_si128(chunk, fold);  // '[' -> '{' and ']' -> '}'
        __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                                    _mm_or_si128(_mm_cmpeq_epi8(folded, open), _mm_cmpeq_epi8(folded, close)));
        for (unsigned mask = unsigned(_mm_movemask_epi8(hits)); mask != 0; mask &= mask - 1) {
          if (step(i + unsigned(__builtin_ctz(mask)))) return true;
        }
      }
#endif
      for (; i < n; ++i) {
        char c = base[i];
        if ((c == '"' || c == '\\' || c == '{' || c == '}' || c == '[' || c == ']') && step(i)) return true;
      }
      pos_ = n;
    }
  }

  ByteSource& source_;
  const std::string& path_;
  StringPool& strings_;
  ChromeTrace& trace_;

  std::unique_ptr<char[]> buf_;
  size_t cap_ = 0;
  size_t len_ = 1, pos_ = 1;  // buf_[0] is the spare byte
  int64_t base_ = -1;         // offset in the document of buf_[0]
  bool eof_ = false;

  bool in_event_ = false;
  uint64_t event_start_ = 0;
  uint64_t batch_first_ = 0, batch_end_ = 0;
  size_t batch_count_ = 0;
  uint64_t batches_ = 0;
  size_t workers_ = 1;

  InternCache intern_;
  EventParser inline_parser_;
  std::vector<std::unique_ptr<Batch>> batches_owned_;
  std::vector<Batch*> free_;
  std::vector<StringId> ids_;
  std::vector<uint32_t> lane_ids_;
  std::unique_ptr<ParsePool> pool_;  // last: its threads are joined before the batches go
};

}  // namespace

void read_chrome_json(ByteSource& source, const std::string& path, StringPool& strings, ChromeTrace& trace,
                      unsigned threads) {
  // Kineto events average 250 bytes; reserving address space for more is
  // free (untouched pages cost nothing) and spares the copies of growth.
  trace.events.reserve(size_t(std::min<uint64_t>(source.size_hint(), uint64_t(1) << 40) / 160));
  // In 2 MiB pages where the kernel allows it (transparent huge pages on
  // madvise): the events are written once, in order, and a page fault per
  // 4 KiB cost more than the writing (6% of `loupe analyze` of the V100
  // fixture, measured side by side).
  constexpr size_t kHugePage = size_t(2) << 20;
  char* events = reinterpret_cast<char*>(trace.events.data());
  size_t bytes = trace.events.capacity() * sizeof(ChromeEvent);
  size_t skip = (kHugePage - reinterpret_cast<uintptr_t>(events) % kHugePage) % kHugePage;
  if (bytes > skip + kHugePage) ::madvise(events + skip, (bytes - skip) / kHugePage * kHugePage, MADV_HUGEPAGE);
  JsonReader(source, path, strings, trace, threads).run();
}

}  // namespace loupe::prof::import
