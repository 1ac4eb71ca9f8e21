// loupe._core's jobs: a job's analysis as the map (one rank's summary) and
// the reduce (the report from the summaries) that loupe.jobs runs on Dask,
// and the whole of it locally (jobs.cpp).
#pragma once

#include <nanobind/nanobind.h>

namespace loupe::python {

void add_jobs(nanobind::module_& m);

}  // namespace loupe::python
