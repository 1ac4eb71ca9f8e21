// The rules of docs/analyses.md, one file each. Every rule reads the shared
// Context (and the idle analysis, which the report always carries) and
// appends its findings.
#pragma once

#include <vector>

#include "analysis/context.h"
#include "analysis/dependency_graph.h"
#include "loupe/prof/analysis.h"

namespace loupe::prof::analysis {

// Measurements the report carries whatever rules run.
void measure_idle(const Context& ctx, AnalysisReport& report);
void measure_steps(const Context& ctx, AnalysisReport& report);
CriticalPath critical_path(const DependencyGraph& graph);

void rule_recompile(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_transfer(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_idle_gap(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_memory(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_leak(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_tiny_kernels(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_async_timing(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_no_accelerator(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_steps(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_communication(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_copies(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);
void rule_critical_path(const Context& ctx, const AnalysisReport& report, std::vector<Finding>& out);

// What the trace lacks (completeness.h): its metadata's signs and the
// graph replays its events show.
std::vector<Incompleteness> check_completeness(const Context& ctx);
// AnalysisReport::launch_queue_full_ns.
int64_t launch_queue_full_ns(const Context& ctx);
// Each finding with a fix: what the what-if replay predicts the fix saves.
void predict_fixes(const DependencyGraph& graph, std::vector<Finding>& findings);

uint64_t recompiles_after_warmup(const Context& ctx);
// Those compiles, each as (thread, its time on the thread).
std::vector<std::pair<uint32_t, Interval>> late_compiles(const Context& ctx);
double tiny_kernel_fraction(const Context& ctx);

// Shared wording.
std::string device_label(const Context& ctx, uint32_t device);
std::string thread_label(const Context& ctx, uint32_t thread);

// Severity by cost: a warning when the finding's impact is at least
// `warning_fraction` of the active window; else information, its
// suggestion (set before) then starting with "minor", the share and the
// threshold, so that a few microseconds are not read as a problem.
void grade_by_share(const Context& ctx, double warning_fraction, Finding& f);

}  // namespace loupe::prof::analysis
