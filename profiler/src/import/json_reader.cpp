#include "import/json_reader.h"

#include <fmt/format.h>
#include <simdjson.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <memory>
#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "import/decimal.h"
#include "import/imported_trace.h"
#include "loupe/prof/import.h"
#include "loupe/prof/trace_format.h"

namespace loupe::prof::import {

namespace {

namespace od = simdjson::ondemand;

constexpr size_t kInitialBuffer = size_t(4) << 20;
// Complete events are parsed in runs (batches) of about this many bytes,
// on worker threads when the machine has more than one core.
constexpr uint64_t kBatchBytes = uint64_t(256) << 10;
constexpr size_t kMaxWorkers = 4;
constexpr uint64_t kNoOffset = ~uint64_t(0);

bool is_space(int c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The text of a field's key as written (no escapes): keys loupe looks for
// never contain escapes, so a key with one is returned as "\\" and matches
// nothing.
std::string_view key_text(od::field& field) {
  const char* p = field.key().raw();
  const char* q = p;
  while (*q != '"') {
    if (*q == '\\') return "\\";
    ++q;
  }
  return {p, size_t(q - p)};
}

struct TypeError {
  std::string what;
};

// The type of a value from its first byte (what simdjson itself looks at),
// without going through its error-checked accessors.
od::json_type type_of(od::value& v) {
  std::string_view tok = v.raw_json_token();
  switch (tok.empty() ? 0 : tok[0]) {
    case '"': return od::json_type::string;
    case '{': return od::json_type::object;
    case '[': return od::json_type::array;
    case 't': case 'f': return od::json_type::boolean;
    case 'n': return od::json_type::null;
    default: return od::json_type::number;
  }
}

// A string value without copying when it has no escapes (nearly always).
// The raw token runs from the opening quote to just before the next
// structural character: the closing quote, then perhaps spaces.
std::string_view string_of(od::value& v, std::string_view field, std::deque<std::string>* arena = nullptr) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty() || tok[0] != '"') throw TypeError{fmt::format("'{}' is not a string", field)};
  size_t close = tok.size() - 1;
  while (close > 0 && tok[close] != '"') --close;
  std::string_view content = tok.substr(1, close == 0 ? 0 : close - 1);
  bool escaped = false;
  if (content.size() < 32) {
    for (char c : content) escaped |= c == '\\';
  } else {
    escaped = std::memchr(content.data(), '\\', content.size()) != nullptr;
  }
  if (!escaped) return content;
  std::string_view unescaped = v.get_string();  // in the parser's buffer, reused by its next document
  if (!arena) return unescaped;
  return arena->emplace_back(unescaped);
}

// A name: a string, or (leniently) a number written as its text.
std::string_view text_of(od::value& v, std::string_view field, std::deque<std::string>* arena) {
  if (type_of(v) == od::json_type::number) {
    std::string_view tok = v.raw_json_token();
    double unused = v.get_double();  // validates the number
    (void)unused;
    while (!tok.empty() && is_space(tok.back())) tok.remove_suffix(1);
    return tok;
  }
  return string_of(v, field, arena);
}

// The text of a number (or of a string holding one): exact decimal
// conversion happens on it, never through a double.
std::string_view number_text(od::value& v, std::string_view field) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty()) throw TypeError{fmt::format("'{}' is not a number", field)};
  if (tok[0] == '"') {
    size_t close = tok.find_last_of('"');
    return tok.substr(1, close == 0 ? 0 : close - 1);
  }
  if (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) return tok;
  throw TypeError{fmt::format("'{}' is not a number", field)};
}

// An integer argument, leniently: a number or a string holding one
// (ROCm writes "size": "2560" and "stream": "0x0"). Nothing otherwise.
std::optional<int64_t> lenient_int(od::value& v) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty()) return std::nullopt;
  if (tok[0] == '"') {
    size_t close = tok.find_last_of('"');
    return parse_integer(tok.substr(1, close == 0 ? 0 : close - 1));
  }
  if (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) return parse_integer(tok);
  return std::nullopt;
}

// A small direct-mapped cache in front of the trace's string table: event
// names and categories repeat, and a hit costs a short hash and a compare
// instead of a lookup in the table's hash map.
class InternCache {
 public:
  explicit InternCache(TraceWriter& strings) : strings_(strings) {}
  StringId operator()(std::string_view s) {
    uint64_t h = s.size() * 0x9e3779b97f4a7c15ull;
    if (s.size() >= 8) {
      uint64_t head, tail;
      std::memcpy(&head, s.data(), 8);
      std::memcpy(&tail, s.data() + s.size() - 8, 8);
      h ^= head * 0xbf58476d1ce4e5b9ull ^ tail * 0x94d049bb133111ebull;
    } else {
      for (char c : s) h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    }
    Slot& slot = slots_[(h ^ (h >> 29)) & (kSlots - 1)];
    if (slot.valid && slot.text == s) return slot.id;
    StringId id = strings_.intern(s);
    slot = {strings_.text(id), id, true};  // the table's copy outlives the cache
    return id;
  }

 private:
  static constexpr size_t kSlots = 1024;
  struct Slot {
    std::string_view text;
    StringId id = 0;
    bool valid = false;
  };
  TraceWriter& strings_;
  Slot slots_[kSlots];
};

// A run of complete events, copied out of the reading buffer and framed as
// one JSON array ("[" events "]") in a padded buffer of its own, and what
// parsing it produced. String and lane ids in the results are local to the
// batch (0 is ""); merging maps them onto the trace's, in file order.
struct Batch {
  uint64_t offset = 0;  // document offset of the byte framed as '['
  std::vector<char> bytes;
  size_t length = 0;

  std::vector<ChromeEvent> events;
  std::vector<ChromeCounter> counters;
  std::vector<std::string_view> strings;  // local string id -> text, in bytes or owned
  std::deque<std::string> owned;           // unescaped and composed strings
  std::vector<Lane> lanes;                 // local lane id -> (pid, tid); string ids local
  struct Meta {
    enum Kind : uint8_t { process_name, process_labels, thread_name } kind;
    LaneId pid, tid;
    uint32_t value;  // local string id
  };
  std::vector<Meta> metadata;
  std::map<std::string, uint64_t> skipped;
  uint64_t total_events = 0, metadata_events = 0, begin_end_events = 0;
  int64_t min_ts = std::numeric_limits<int64_t>::max();
  bool failed = false;
  uint64_t error_offset = 0;
  std::string error;

  void clear_results() {
    events.clear();
    counters.clear();
    strings.clear();
    owned.clear();
    lanes.clear();
    metadata.clear();
    skipped.clear();
    total_events = metadata_events = begin_end_events = 0;
    min_ts = std::numeric_limits<int64_t>::max();
    failed = false;
    error.clear();
  }
};

// Parses batches with simdjson's On-Demand API into compact events. One per
// thread: it owns a simdjson parser and the batch-local string and lane
// tables.
class EventParser {
 public:
  void parse(Batch& batch) {
    batch_ = &batch;
    batch.clear_results();
    strings_.clear();
    lanes_.clear();
    has_last_lane_ = false;
    batch.strings.push_back("");
    strings_.emplace("", 0);
    uint64_t current = batch.offset;
    try {
      od::document doc = parser_.iterate(batch.bytes.data(), batch.length, batch.bytes.size());
      for (auto element : doc.get_array()) {
        od::value v = element.value();
        current = batch.offset + uint64_t(v.raw_json_token().data() - batch.bytes.data());
        od::object event = v.get_object();
        read_event(event);
      }
    } catch (const simdjson::simdjson_error& e) {
      batch.failed = true;
      batch.error_offset = current;
      batch.error = fmt::format("malformed JSON in this event: {}", e.what());
    } catch (const TypeError& e) {
      batch.failed = true;
      batch.error_offset = current;
      batch.error = fmt::format("bad event: {}", e.what);
    } catch (const std::bad_alloc&) {
      batch.failed = true;
      batch.error_offset = current;
      batch.error = "out of memory while reading the events";
    }
  }

 private:
  uint32_t intern(std::string_view s) {
    auto [it, inserted] = strings_.try_emplace(s, uint32_t(batch_->strings.size()));
    if (inserted) batch_->strings.push_back(s);
    return it->second;
  }

  uint32_t lane(LaneId pid, LaneId tid) {
    if (has_last_lane_ && pid == last_pid_ && tid == last_tid_) return last_lane_;  // runs of one lane
    uint64_t key = uint64_t(pid.value) * 0x9e3779b97f4a7c15ull ^ uint64_t(tid.value) * 0xbf58476d1ce4e5b9ull ^
                   (uint64_t(pid.is_string) << 1 | uint64_t(tid.is_string));
    std::vector<uint32_t>& bucket = lanes_[key];
    uint32_t id = ~0u;
    for (uint32_t candidate : bucket) {
      if (batch_->lanes[candidate].pid == pid && batch_->lanes[candidate].tid == tid) id = candidate;
    }
    if (id == ~0u) {
      id = uint32_t(batch_->lanes.size());
      batch_->lanes.push_back({pid, tid});
      bucket.push_back(id);
    }
    has_last_lane_ = true;
    last_pid_ = pid;
    last_tid_ = tid;
    last_lane_ = id;
    return id;
  }

  LaneId lane_id(od::value& v, std::string_view field) {
    std::string_view tok = v.raw_json_token();
    if (!tok.empty() && tok[0] == '"') return {int64_t(intern(string_of(v, field, &batch_->owned))), true};
    std::optional<int64_t> n = lenient_int(v);
    if (!n) throw TypeError{fmt::format("'{}' is neither a number nor a string", field)};
    return {*n, false};
  }

  // `numbers`: also collect the numeric arguments (a counter's series).
  void read_args(od::object& args, ChromeEvent& e, std::string_view& name_arg, std::string_view& kind_arg,
                 bool numbers) {
    numeric_args_.clear();
    for (auto f : args) {
      od::field field = std::move(f);
      std::string_view k = key_text(field);
      od::value v = field.value();
      od::json_type type = type_of(v);
      if (type == od::json_type::object || type == od::json_type::array) continue;
      bool is_string = type == od::json_type::string;
      switch (k.size()) {
        case 4:
          if (k == "name" && is_string) {
            name_arg = string_of(v, "args.name", &batch_->owned);
            continue;
          }
          if (k == "kind" && is_string) {
            if (kind_arg.empty()) kind_arg = string_of(v, "args.kind", &batch_->owned);
            continue;
          }
          if (k == "Addr") {
            e.addr = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "size") {
            e.bytes = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        case 5:
          if (k == "bytes" || k == "Bytes") {
            e.bytes = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        case 6:
          if (k == "device") {
            e.device = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "stream") {
            e.stream = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "labels" && is_string) {
            kind_arg = string_of(v, "args.labels", &batch_->owned);
            continue;
          }
          break;
        case 8:
          if (k == "step_num") {
            e.step = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        case 9:
          if (k == "device_id" || k == "Device Id") {
            e.device = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "stream_id") {
            e.stream = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "num_bytes") {
            e.bytes = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        case 11:
          if (k == "correlation") {
            e.correlation = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "Device Type") {
            e.device_type = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        case 14:
          if (k == "correlation_id") {
            e.correlation = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "device_ordinal") {
            e.device = lenient_int(v).value_or(kNone);
            continue;
          }
          if (k == "cuda_sync_kind" && is_string) {
            kind_arg = string_of(v, "args.cuda_sync_kind", &batch_->owned);
            continue;
          }
          if ((k == "memcpy_details" || k == "memset_details") && is_string) {
            kind_arg = string_of(v, "args.memcpy_details", &batch_->owned);
            continue;
          }
          if (k == "Total Reserved") {
            e.total_reserved = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        case 15:
          if (k == "Total Allocated") {
            e.total_allocated = lenient_int(v).value_or(kNone);
            continue;
          }
          break;
        default:
          break;
      }
      if (numbers && type == od::json_type::number) numeric_args_.emplace_back(k, v.raw_json_token());
    }
  }

  void read_event(od::object& object) {
    ++batch_->total_events;
    ChromeEvent e;
    std::string_view ph, name, cat, ts, dur, id, bp, name_arg, kind_arg;
    LaneId pid, tid;
    bool any_field = false;
    numeric_args_.clear();
    for (auto f : object) {
      any_field = true;
      od::field field = std::move(f);
      std::string_view k = key_text(field);
      od::value v = field.value();
      switch (k.size()) {
        case 2:
          if (k == "ph") ph = string_of(v, "ph", &batch_->owned);
          else if (k == "ts") ts = number_text(v, "ts");
          else if (k == "id") id = v.raw_json_token();
          else if (k == "bp") bp = string_of(v, "bp", &batch_->owned);
          break;
        case 3:
          if (k == "pid") pid = lane_id(v, "pid");
          else if (k == "tid") tid = lane_id(v, "tid");
          else if (k == "cat") cat = text_of(v, "cat", &batch_->owned);
          else if (k == "dur") dur = number_text(v, "dur");
          break;
        case 4:
          if (k == "name") name = text_of(v, "name", &batch_->owned);
          else if (k == "args" && type_of(v) == od::json_type::object) {
            od::object args = v.get_object();
            // Counter series are only needed for "C" events (or when "ph"
            // comes after "args", as some writers order them).
            read_args(args, e, name_arg, kind_arg, ph.empty() || ph == "C");
          }
          break;
        default:
          break;
      }
    }
    if (!any_field) {
      --batch_->total_events;  // "{}": XLA ends its event list with one
      return;
    }
    if (ph.empty()) throw TypeError{"the event has no 'ph'"};
    char kind = ph.size() == 1 ? ph[0] : '?';
    if (kind == 'M') {
      ++batch_->metadata_events;
      if (name == "process_name") {
        batch_->metadata.push_back({Batch::Meta::process_name, pid, tid, intern(name_arg)});
      } else if (name == "process_labels") {
        batch_->metadata.push_back({Batch::Meta::process_labels, pid, tid, intern(kind_arg)});
      } else if (name == "thread_name") {
        batch_->metadata.push_back({Batch::Meta::thread_name, pid, tid, intern(name_arg)});
      }
      return;
    }
    switch (kind) {
      case 'X': case 'B': case 'E': case 'i': case 'I': case 'n': case 'b': case 'e':
      case 's': case 't': case 'f': case 'C':
        break;
      default:
        ++batch_->skipped[fmt::format("events of phase '{}'", ph)];
        return;
    }
    if (ts.empty()) throw TypeError{fmt::format("the event (ph '{}') has no 'ts'", ph)};
    std::optional<int64_t> t = micros_to_nanos(ts);
    if (!t) throw TypeError{fmt::format("'ts' is not a number: {}", ts)};
    e.ts = *t;
    if (!is_trace_time(e.ts)) {
      ++batch_->skipped[kTimeOutOfRange];
      return;
    }
    e.lane = lane(pid, tid);
    if (kind == 'C') {
      StringId base = intern(name);
      for (const auto& [key, text] : numeric_args_) {
        std::optional<int64_t> milli = scaled_decimal(text, 3);
        double value = milli ? double(*milli) / 1000.0 : 0.0;
        if (!milli) {
          value = std::strtod(std::string(text).c_str(), nullptr);  // huge or tiny: a double is all it is
        }
        if (!std::isfinite(value)) {
          ++batch_->skipped["counter values that are not finite"];
          continue;
        }
        StringId series =
            numeric_args_.size() == 1 ? base : intern(batch_->owned.emplace_back(fmt::format("{}.{}", name, key)));
        batch_->counters.push_back({e.ts, e.lane, series, value});
      }
      return;
    }
    if (kind == 'X') {
      if (dur.empty()) throw TypeError{"the complete event (ph 'X') has no 'dur'"};
      std::optional<int64_t> d = micros_to_nanos(dur);
      if (!d) throw TypeError{fmt::format("'dur' is not a number: {}", dur)};
      e.dur = *d;
      int64_t end = 0;
      if (__builtin_add_overflow(e.ts, e.dur, &end) || !is_trace_time(end)) {
        ++batch_->skipped[kTimeOutOfRange];
        return;
      }
    }
    if (kind == 's' || kind == 't' || kind == 'f') {
      if (!id.empty()) {
        std::string_view idt = id;
        if (idt[0] == '"') idt = idt.substr(1, idt.find_last_of('"') - 1);
        e.correlation = parse_integer(idt).value_or(kNone);
      }
      if (!bp.empty()) e.bp = bp[0];
    }
    e.ph = kind;
    batch_->min_ts = std::min(batch_->min_ts, e.ts);
    if (kind == 'B' || kind == 'E') ++batch_->begin_end_events;
    e.name = intern(name);
    e.cat = cat.empty() ? 0 : intern(cat);
    if (!kind_arg.empty()) e.arg_kind = intern(kind_arg);
    if (!name_arg.empty()) e.arg_name = intern(name_arg);
    batch_->events.push_back(e);
  }

  Batch* batch_ = nullptr;
  od::parser parser_;
  std::unordered_map<std::string_view, uint32_t> strings_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> lanes_;
  bool has_last_lane_ = false;
  LaneId last_pid_, last_tid_;
  uint32_t last_lane_ = 0;
  std::vector<std::pair<std::string_view, std::string_view>> numeric_args_;
};

// Worker threads parsing batches; results are taken back in submission
// order, so the trace is the same whatever the number of threads.
class ParsePool {
 public:
  explicit ParsePool(size_t workers) {
    for (size_t i = 0; i < workers; ++i) threads_.emplace_back([this] { work(); });
  }
  ~ParsePool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ParsePool(const ParsePool&) = delete;
  ParsePool& operator=(const ParsePool&) = delete;

  void submit(Batch* batch) {
    {
      std::lock_guard lock(mu_);
      todo_.push_back(batch);
      order_.push_back(batch);
    }
    ready_.notify_one();
  }
  size_t in_flight() {
    std::lock_guard lock(mu_);
    return order_.size();
  }
  // The oldest outstanding batch, once parsed; nullptr if none.
  Batch* next_done() {
    std::unique_lock lock(mu_);
    if (order_.empty()) return nullptr;
    Batch* b = order_.front();
    done_cv_.wait(lock, [&] { return done_.count(b) > 0; });
    done_.erase(b);
    order_.pop_front();
    return b;
  }

 private:
  void work() {
    EventParser parser;
    for (;;) {
      Batch* b = nullptr;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return stop_ || !todo_.empty(); });
        if (todo_.empty()) return;  // stopping
        b = todo_.front();
        todo_.pop_front();
      }
      parser.parse(*b);
      {
        std::lock_guard lock(mu_);
        done_.insert(b);
      }
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_, done_cv_;
  std::deque<Batch*> todo_, order_;
  std::set<Batch*> done_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

class JsonReader {
 public:
  JsonReader(ByteSource& source, const std::string& path, TraceWriter& strings, ChromeTrace& trace,
             unsigned threads)
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
      fail(kNoOffset, trace_.bytes > 0          ? "the JSON document is empty"
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
      fail(offset(), "not a trace: the JSON document is a single value, not an object with 'traceEvents' or an "
                     "array of events");
    } else {
      fail(offset(), "not JSON (a trace file is JSON, gzip-compressed JSON or an Nsight Systems SQLite export)");
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
        } else if (key == "deviceProperties" || key == "baseTimeNanoseconds" || key == "schemaVersion") {
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
      fail(offset(), "not a trace: the JSON object has no 'traceEvents' array (expected a Chrome trace: PyTorch "
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
    auto take = [&](int ch) {
      if (capture) capture->push_back(char(ch));
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
  TraceWriter& strings_;
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

void read_chrome_json(ByteSource& source, const std::string& path, TraceWriter& strings, ChromeTrace& trace,
                      unsigned threads) {
  // Kineto events average 250 bytes; reserving address space for more is
  // free (untouched pages cost nothing) and spares the copies of growth.
  trace.events.reserve(size_t(std::min<uint64_t>(source.size_hint(), uint64_t(1) << 40) / 160));
  JsonReader(source, path, strings, trace, threads).run();
}

}  // namespace loupe::prof::import
