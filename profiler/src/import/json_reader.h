// Streams a Chrome trace-event JSON document (Kineto, JAX and others) into
// a ChromeTrace, in bounded memory.
//
// The document is read in chunks straight into one padded buffer. A small
// scanner finds where each element of the "traceEvents" array ends; every
// run of complete events in the buffer is handed to simdjson's On-Demand
// parser as one array (the separator bytes before and after the run are
// briefly overwritten with '[' and ']', so nothing is copied), and the
// unfinished event at the end of the buffer moves to its front before the
// next chunk is read. Memory is the buffer (4 MiB, more only for a single
// larger event), simdjson's index of one buffer, and the compact events.
#pragma once

#include <string>

#include "import/byte_source.h"
#include "import/chrome_events.h"
#include "loupe/prof/trace_writer.h"

namespace loupe::prof::import {

// Reads the document from `source` into `trace`, interning strings in
// `strings`. Accepts an object with a "traceEvents" array (and Kineto's
// deviceProperties, baseTimeNanoseconds) or a bare array of events. Throws
// ImportError naming `path` and the byte offset in the (uncompressed) JSON
// for a document that is truncated, malformed or not a trace.
// `threads`: parsing threads, 0 = one per core (at most 4), 1 = none.
void read_chrome_json(ByteSource& source, const std::string& path, TraceWriter& strings, ChromeTrace& trace,
                      unsigned threads = 0);

}  // namespace loupe::prof::import
