// Streams a Chrome trace-event JSON document (Kineto, JAX and others) into
// a ChromeTrace, in bounded memory.
//
// The document is read in chunks straight into one buffer. A small scanner
// finds where each element of the "traceEvents" array ends; each run of
// complete events (about 256 KiB) is copied into a padded buffer of its own,
// framed as one JSON array, and parsed with simdjson's On-Demand API, on
// worker threads when there is more than one core. A run's strings and
// lanes are numbered locally and mapped onto the trace's in file order, so
// the result does not depend on the number of threads. The unfinished
// event at the end of the buffer moves to its front before the next chunk
// is read. Memory is the 4 MiB buffer (more only for a single larger
// event), a few runs in flight, and the compact events.
//
// The scanner and the merge are here (json_reader.cpp); a run is a Batch
// (json_batch.h), parsed by an EventParser (event_parser.h) on the threads
// of a ParsePool (parse_pool.h), reading values through json_values.h;
// strings reach the importers' StringPool (string_pool.h) through an
// InternCache (intern_cache.h).
#pragma once

#include <string>

#include "import/byte_source.h"
#include "import/chrome_events.h"
#include "import/string_pool.h"

namespace loupe::prof::import {

// Reads the document from `source` into `trace`, interning strings in
// `strings`. Accepts an object with a "traceEvents" array (and Kineto's
// deviceProperties, baseTimeNanoseconds) or a bare array of events. Throws
// ImportError naming `path` and the byte offset in the (uncompressed) JSON
// for a document that is truncated, malformed or not a trace.
// `threads`: parsing threads, 0 = one per core (at most 4), 1 = none.
void read_chrome_json(ByteSource& source, const std::string& path, StringPool& strings, ChromeTrace& trace,
                      unsigned threads = 0);

}  // namespace loupe::prof::import
