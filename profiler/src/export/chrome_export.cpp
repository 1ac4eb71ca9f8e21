#include "loupe/prof/chrome_export.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "loupe/prof/safe_text.h"

namespace loupe::prof {

namespace {

// Process ids in the export: host threads keep their process; each device
// gets its own, above any real pid.
constexpr int64_t kDevicePidBase = 1'000'000'000;

class Writer {
 public:
  explicit Writer(std::FILE* out) : out_(out) {}

  // One event object; `fields` is the JSON between the braces.
  void event(const std::string& fields) {
    buffer_ += first_ ? "\n" : ",\n";
    first_ = false;
    buffer_ += '{';
    buffer_ += fields;
    buffer_ += '}';
    ++count_;
    if (buffer_.size() > (1 << 20)) flush();
  }
  void raw(const std::string& s) {
    buffer_ += s;
    flush();
  }
  void flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(), out_) != buffer_.size()) {
      throw std::runtime_error(fmt::format("cannot write: {}", std::strerror(errno)));
    }
    buffer_.clear();
  }
  uint64_t count() const { return count_; }

 private:
  std::FILE* out_;
  std::string buffer_;
  bool first_ = true;
  uint64_t count_ = 0;
};

// A JSON string literal of text that is valid UTF-8.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:  // a byte: other controls escaped, the rest (UTF-8 included) as it is
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += char(c);
    }
  }
  return out + "\"";
}

// Names from the trace as JSON strings: cut to kExportNameLimit, invalid
// UTF-8 replaced, each distinct name prepared once.
class Names {
 public:
  Names(const TraceModel& m, ChromeExportStats& stats) : m_(m), stats_(stats), quoted_(m.strings.size()) {}
  const std::string& operator()(StringId id) {
    if (id >= quoted_.size()) return empty_;
    if (quoted_[id].empty()) quoted_[id] = (*this)(std::string_view(m_.str(id)));
    return quoted_[id];
  }
  std::string operator()(std::string_view text) {
    if (text.size() > kExportNameLimit) ++stats_.names_cut;
    return quote(valid_utf8(cut_to(text, kExportNameLimit), &stats_.invalid_utf8));
  }

 private:
  const TraceModel& m_;
  ChromeExportStats& stats_;
  std::vector<std::string> quoted_;  // by string id; empty until first used
  std::string empty_ = "\"\"";
};

// Nanoseconds as microseconds with three decimals, exactly.
std::string us(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  uint64_t a = ns < 0 ? uint64_t(-(ns + 1)) + 1 : uint64_t(ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

// Writes a model's events, table by table, as Chrome trace events.
class ChromeEvents {
 public:
  ChromeEvents(const TraceModel& model, Names& quoted, Writer& writer) : m(model), names(quoted), w(writer) {}
  void write_all() {
    metadata();
    host_spans();
    launches();
    device_ops();
    transfers();
    memory_and_counters();
    compiles();
    instants_and_steps();
  }

 private:
  const TraceModel& m;
  Names& names;
  Writer& w;

  int64_t pid_of_thread(uint32_t thread) const {
    const Thread* t = m.thread(thread);
    return t && t->process != 0 ? t->process : 1;
  }

  // Names of processes and threads.
  void metadata() {
    for (const Thread& t : m.threads) {
      w.event(fmt::format("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}",
                          pid_of_thread(t.id), t.id, names(std::string_view(t.name))));
    }
    for (const Device& d : m.devices) {
      w.event(fmt::format("\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}",
                          kDevicePidBase + d.id, names(fmt::format("device {}: {}", d.id, d.name))));
    }
    for (const Stream& s : m.streams) {
      w.event(fmt::format("\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}",
                          kDevicePidBase + s.device, s.stream, names(fmt::format("stream {}: {}", s.stream, s.name))));
    }
  }

  // Host spans; complete events nest by time on their thread.
  void host_spans() {
    for (const HostSpans& s : m.host_spans) {
      int64_t pid = pid_of_thread(s.thread);
      for (size_t i = 0; i < s.size(); ++i) {
        w.event(fmt::format("\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{}",
                            names(s.name[i]), name_of(s.kind[i]), pid, s.thread, us(s.start[i]), us(s.dur[i])));
      }
    }
  }

  // Launches, with a flow to their device op.
  void launches() {
    for (const Launches& l : m.launches) {
      int64_t pid = pid_of_thread(l.thread);
      for (size_t i = 0; i < l.size(); ++i) {
        w.event(
            fmt::format("\"ph\":\"X\",\"name\":{},\"cat\":\"launch\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                        "\"args\":{{\"correlation\":{}}}",
                        names(l.name[i]), pid, l.thread, us(l.start[i]), us(l.dur[i]), l.correlation[i]));
        // A launch whose device op the trace lacks has no flow to end.
        if (l.correlation[i] != 0 && l.device[i] != kUnknownDevice) {
          w.event(
              fmt::format("\"ph\":\"s\",\"id\":{},\"name\":\"launch\",\"cat\":\"flow\",\"pid\":{},\"tid\":{},\"ts\":{}",
                          l.correlation[i], pid, l.thread, us(l.start[i])));
        }
      }
    }
  }

  // Device operations, each the end of its launch's flow.
  void device_ops() {
    for (const DeviceOps& o : m.device_ops) {
      int64_t pid = kDevicePidBase + o.device;
      for (size_t i = 0; i < o.size(); ++i) {
        std::string args = fmt::format("\"correlation\":{}", o.correlation[i]);
        if (o.kind[i] != DeviceOpKind::kernel) {
          args += fmt::format(",\"bytes\":{},\"copy\":\"{}\"", o.bytes[i], name_of(o.copy_kind[i]));
        }
        w.event(
            fmt::format("\"ph\":\"X\",\"name\":{},\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                        "\"args\":{{{}}}",
                        names(o.name[i]), name_of(o.kind[i]), pid, o.stream, us(o.start[i]), us(o.dur[i]), args));
        if (o.correlation[i] != 0) {
          w.event(
              fmt::format("\"ph\":\"f\",\"bp\":\"e\",\"id\":{},\"name\":\"launch\",\"cat\":\"flow\",\"pid\":{},"
                          "\"tid\":{},\"ts\":{}",
                          o.correlation[i], pid, o.stream, us(o.start[i])));
        }
      }
    }
  }

  // Transfers as host-side spans, with their call site.
  void transfers() {
    for (const Transfers& t : m.transfers) {
      int64_t pid = pid_of_thread(t.thread);
      for (size_t i = 0; i < t.size(); ++i) {
        const CallSite* cs = m.callsite(t.callsite[i]);
        std::string site = cs ? fmt::format("{}:{}", m.str(cs->file), cs->line) : "";
        w.event(fmt::format(
            "\"ph\":\"X\",\"name\":{},\"cat\":\"transfer\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
            "\"args\":{{\"bytes\":{},\"synchronous\":{},\"host_memory\":\"{}\",\"callsite\":{}}}",
            names(fmt::format("transfer {}", name_of(t.direction[i]))), pid, t.thread, us(t.start[i]), us(t.dur[i]),
            t.bytes[i], t.synchronous[i] ? "true" : "false", name_of(t.host_memory[i]), names(site)));
      }
    }
  }

  // Memory as counters per device.
  void memory_and_counters() {
    for (const MemoryEvents& me : m.memory) {
      int64_t pid = kDevicePidBase + me.device;
      for (size_t i = 0; i < me.size(); ++i) {
        w.event(
            fmt::format("\"ph\":\"C\",\"name\":\"memory\",\"pid\":{},\"ts\":{},\"args\":{{\"allocated\":{},"
                        "\"reserved\":{}}}",
                        pid, us(me.time[i]), me.allocated[i], me.reserved[i]));
      }
    }
    for (const Counter& c : m.counters) {
      for (size_t i = 0; i < c.size(); ++i) {
        w.event(fmt::format("\"ph\":\"C\",\"name\":{},\"pid\":1,\"ts\":{},\"args\":{{\"value\":{}}}", names(c.name),
                            us(c.time[i]), c.value[i]));
      }
    }
  }

  // Compiles: the compile itself as a span, and every miss after the first
  // of its function as a global instant, so recompiles stand out.
  void compiles() {
    for (const Compiles& c : m.compiles) {
      int64_t pid = pid_of_thread(c.thread);
      for (size_t i = 0; i < c.size(); ++i) {
        if (c.kind[i] == CompileKind::hit) continue;
        std::string args =
            fmt::format("\"signature\":{},\"reason\":{}", names(c.signature[i]), names(std::string_view(c.reason[i])));
        w.event(fmt::format(
            "\"ph\":\"X\",\"name\":{},\"cat\":\"compile\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
            "\"args\":{{{}}}",
            names(fmt::format("compile {}", m.str(c.function[i]))), pid, c.thread, us(c.start[i]), us(c.dur[i]), args));
        if (c.kind[i] == CompileKind::miss && c.reason[i] != "first compile") {
          w.event(fmt::format(
              "\"ph\":\"i\",\"s\":\"g\",\"name\":{},\"cat\":\"recompile\",\"pid\":{},\"tid\":{},\"ts\":{},"
              "\"args\":{{{}}}",
              names(fmt::format("recompile {}", m.str(c.function[i]))), pid, c.thread, us(c.start[i]), args));
        }
      }
    }
  }

  void instants_and_steps() {
    for (const Instants& in : m.instants) {
      int64_t pid = pid_of_thread(in.thread);
      for (size_t i = 0; i < in.size(); ++i) {
        w.event(fmt::format("\"ph\":\"i\",\"s\":\"t\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{}", names(in.name[i]),
                            pid, in.thread, us(in.time[i])));
      }
    }
    for (const Steps& s : m.steps) {
      int64_t pid = pid_of_thread(s.thread);
      for (size_t i = 0; i < s.size(); ++i) {
        w.event(
            fmt::format("\"ph\":\"X\",\"name\":\"step {}\",\"cat\":\"step\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{}",
                        s.number[i], pid, s.thread, us(s.start[i]), us(s.dur[i])));
      }
    }
  }
};

}  // namespace

ChromeExportStats export_chrome_trace(const TraceModel& m, std::FILE* out) {
  ChromeExportStats stats;
  Names names(m, stats);
  Writer w(out);
  w.raw("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"producer\": " + names(std::string_view(m.info.producer)) +
        ", \"exporter\": \"loupe export\"},\n\"traceEvents\": [");
  ChromeEvents(m, names, w).write_all();
  w.raw("\n]}\n");
  if (std::fflush(out) != 0) throw std::runtime_error(fmt::format("cannot write: {}", std::strerror(errno)));
  stats.events = w.count();
  return stats;
}

}  // namespace loupe::prof
