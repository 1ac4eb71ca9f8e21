// Chrome trace-event JSON from any tool: complete and begin/end events
// become host spans of their (pid, tid), instants become instants and
// counter events counters. Kineto and JAX traces have their own mappings;
// this one is for everything else.
#include <fmt/format.h>

#include <algorithm>

#include "import/chrome_common.h"
#include "import/kineto_vocabulary.h"
#include "import/mappings.h"

namespace loupe::prof::import {

void map_chrome(ChromeTrace& raw, StringPool& strings, ImportedTrace& out) {
  complete_begin_end(raw);
  LaneThreads threads(raw, strings);
  for (const ChromeEvent& e : raw.events) {
    switch (e.ph) {
      case 'X':
        if (e.dur < 0) {
          ++out.skipped["events with a negative duration"];
          break;
        }
        out.host_spans.push_back(
            {.thread = threads.thread(e.lane), .start = e.ts, .dur = e.dur, .name = e.name, .kind = SpanKind::user});
        break;
      case 'i':
      case 'I':
      case 'n': add_host_instant(e, threads, out); break;
      case 's':
      case 't':
      case 'f': ++out.skipped["flow events"]; break;
      default: ++out.skipped["async events (ph 'b', 'e')"]; break;  // a char: the parser keeps no other phase
    }
  }
  finish_mapping(raw, threads, out);
  out.meta["source_format"] = "chrome";
  out.meta["clock"] = "chrome trace: ts in us";
  guess_wall_clock(raw, out);
}

}  // namespace loupe::prof::import
