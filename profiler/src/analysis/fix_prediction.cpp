// What fixing a finding would save: its rule names the fix as a WhatIf
// (the waits it removes, the host time it takes away), and the run's
// dependency graph (the critical path's) is replayed with it. The saving is the
// mean step's, or the run's when it has no steps; a fix that changes no
// event of the graph predicts nothing, rather than "saves 0".
#include <optional>

#include "analysis/rules.h"
#include "analysis/whatif.h"

namespace loupe::prof::analysis {

void predict_fixes(const DependencyGraph& graph, std::vector<Finding>& findings) {
  std::optional<Predictor> predictor;  // only for a trace with a finding to predict
  for (Finding& f : findings) {
    if (f.fix.empty()) continue;
    if (!predictor) predictor.emplace(graph);
    Prediction p = predictor->predict(f.fix);
    if (p.changed() == 0) continue;
    bool per_step = !p.steps.empty();
    int64_t base = per_step ? p.mean_measured_ns : p.measured_ns;
    f.predicted = true;
    f.predicted_per_step = per_step;
    f.predicted_saving_ns = per_step ? p.saved_per_step_ns() : p.measured_ns - p.predicted_ns;
    f.predicted_saving_fraction = base > 0 ? double(f.predicted_saving_ns) / double(base) : 0;
  }
}

}  // namespace loupe::prof::analysis
