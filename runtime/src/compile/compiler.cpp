#include "compile/compiler.h"

#include <fmt/format.h>

#include "compile/passes.h"
#include "exec/device_impl.h"
#include "exec/nvtx.h"

namespace loupe::rt::compile {

namespace {
int64_t now_ns() { return prof::monotonic_ns(); }
}  // namespace

Compiled compile_graph(ir::Graph graph, const std::string& name, const JitOptions& options, Device device) {
  Compiled c;
  std::string passes;
  int64_t opt_start = now_ns();
  auto pass = [&](const char* span, const char* label, ir::Graph (*fn)(const ir::Graph&)) {
    exec::Phase phase(span, prof::SpanKind::compile);
    int64_t t0 = now_ns();
    size_t before = graph.size();
    graph = fn(graph);
    passes += fmt::format("{}{} {:.3f} ms ({} -> {} nodes)", passes.empty() ? "" : ", ", label,
                          double(now_ns() - t0) / 1e6, before, graph.size());
  };
  {
    exec::Phase phase("optimize", prof::SpanKind::compile);
    if (options.optimize) {
      pass("pass dce", "dce", eliminate_dead_code);
      pass("pass cse", "cse", eliminate_common_subexpressions);
      pass("pass constant folding", "constant folding", fold_constants);
      pass("pass cse", "cse", eliminate_common_subexpressions);
      pass("pass dce", "dce", eliminate_dead_code);
    } else {
      // Still drop what no output needs, or the executable computes it.
      pass("pass dce", "dce", eliminate_dead_code);
    }
  }
  int64_t opt_end = now_ns();
  LowerStats stats;
  std::string device_text;
  {
    exec::Phase phase("codegen", prof::SpanKind::compile);
    c.exe = lower(graph, options.fuse, &stats);
    std::vector<std::shared_ptr<const exec::KernelSpec>> specs;
    for (const Executable::Step& step : c.exe->steps) specs.push_back(step.spec);
    device_text = exec::device_impl(device).prepare(specs);
  }
  int64_t codegen_end = now_ns();
  passes += fmt::format(", fusion {:.3f} ms ({})", double(stats.fusion_ns) / 1e6, options.fuse ? "on" : "off");
  c.optimize_ns = opt_end - opt_start + stats.fusion_ns;
  c.codegen_ns = codegen_end - opt_end - stats.fusion_ns;
  c.nodes = c.exe->nodes;
  c.kernels = uint32_t(c.exe->steps.size());
  c.ir = ir::print_graph(graph, name) + "passes: " + passes + "\n" + c.exe->text + device_text;
  return c;
}

}  // namespace loupe::rt::compile
