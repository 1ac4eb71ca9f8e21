#include "compile/fusion.h"

#include <algorithm>
#include <map>

#include "compile/ir_names.h"

namespace loupe::rt::compile {

namespace {

class Grouper {
 public:
  Grouper(const Graph& g, bool fuse) : g_(g), fuse_(fuse), group_(g.size(), -1) {}

  Grouping run() {
    form_groups();
    if (fuse_) merge_groups();
    return {std::move(groups_), std::move(group_)};
  }

 private:
  NodeId root(NodeId x) const {
    while (is_alias(g_[x].op) || is_strided_view(g_[x].op)) x = g_[x].inputs[0];
    return x;
  }
  bool reaches(int from, int target);
  bool can_join(NodeId n, int gid);
  void add_to(NodeId n, int gid);
  int find(int gid) {
    while (parent_[size_t(gid)] != gid) gid = parent_[size_t(gid)] = parent_[size_t(parent_[size_t(gid)])];
    return gid;
  }
  bool can_merge(int a, int b);
  void merge(int into, int from);
  void merge_groups();
  int new_group(Group::Kind kind, Shape iter);
  void form_groups();

  const Graph& g_;
  bool fuse_;
  std::vector<int> group_;
  std::vector<Group> groups_;
  std::vector<int> visit_mark_;
  std::vector<int> parent_;  // union-find over groups while forming them
  int visit_epoch_ = 0;
};

int Grouper::new_group(Group::Kind kind, Shape iter) {
  Group gr;
  gr.kind = kind;
  gr.iter = std::move(iter);
  groups_.push_back(std::move(gr));
  visit_mark_.push_back(0);
  parent_.push_back(int(groups_.size() - 1));
  return int(groups_.size() - 1);
}

bool Grouper::reaches(int from, int target) {
  // Does group `from` (transitively) read from group `target`?
  ++visit_epoch_;
  std::vector<int> stack{from};
  while (!stack.empty()) {
    int gid = find(stack.back());
    stack.pop_back();
    if (gid == target) return true;
    if (visit_mark_[size_t(gid)] == visit_epoch_) continue;
    visit_mark_[size_t(gid)] = visit_epoch_;
    for (int in : groups_[size_t(gid)].inputs) stack.push_back(in);
  }
  return false;
}

bool Grouper::can_join(NodeId n, int gid) {
  for (NodeId x : g_[n].inputs) {
    if (group_[size_t(x)] >= 0 && find(group_[size_t(x)]) == gid) {
      // A key is loaded from a buffer; a reduction's result exists only
      // once its loop is done.
      if (ir::is_random(g_[n].op) || ir::is_reduction(g_[x].op)) return false;
      continue;
    }
    NodeId r = root(x);
    if (g_[r].op == Op::full) continue;
    int h = group_[size_t(r)] >= 0 ? find(group_[size_t(r)]) : -1;
    if (h < 0) continue;
    if (h == gid) return false;  // a view of this group's own value
    if (reaches(h, gid)) return false;
  }
  return true;
}

void Grouper::add_to(NodeId n, int gid) {
  Group& gr = groups_[size_t(gid)];
  gr.members.push_back(n);
  group_[size_t(n)] = gid;
  for (NodeId x : g_[n].inputs) {
    NodeId r = root(x);
    int h = group_[size_t(r)] >= 0 ? find(group_[size_t(r)]) : -1;
    if (h < 0 || h == gid) continue;
    if (std::find(gr.inputs.begin(), gr.inputs.end(), h) == gr.inputs.end()) gr.inputs.push_back(h);
    bool as_register = r == x && !ir::is_reduction(g_[x].op) && !ir::is_random(g_[n].op) && g_[x].shape == gr.iter &&
                       g_[n].op != Op::argmax;
    if (!as_register && std::find(gr.view_reads.begin(), gr.view_reads.end(), h) == gr.view_reads.end())
      gr.view_reads.push_back(h);
  }
}

bool Grouper::can_merge(int a, int b) {
  const Group &ga = groups_[size_t(a)], &gb = groups_[size_t(b)];
  if (ga.kind != Group::Kind::loop || gb.kind != Group::Kind::loop || ga.iter != gb.iter) return false;
  if (ga.reduce >= 0 && gb.reduce >= 0) return false;
  for (int v : ga.view_reads)
    if (find(v) == b) return false;
  for (int v : gb.view_reads)
    if (find(v) == a) return false;
  // No path between them through a third group.
  for (int in : ga.inputs) {
    int i = find(in);
    if (i != b && i != a && reaches(i, b)) return false;
  }
  for (int in : gb.inputs) {
    int i = find(in);
    if (i != a && i != b && reaches(i, a)) return false;
  }
  return true;
}

void Grouper::merge(int into, int from) {
  Group& a = groups_[size_t(into)];
  Group& b = groups_[size_t(from)];
  parent_[size_t(from)] = into;
  a.members.insert(a.members.end(), b.members.begin(), b.members.end());
  std::sort(a.members.begin(), a.members.end());
  if (b.reduce >= 0) a.reduce = b.reduce;
  for (int in : b.inputs) a.inputs.push_back(in);
  for (int v : b.view_reads) a.view_reads.push_back(v);
  auto canon = [&](std::vector<int>& v) {
    for (int& x : v) x = find(x);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    std::erase(v, into);
  };
  canon(a.inputs);
  canon(a.view_reads);
  b.alive = false;
  b.members.clear();
  b.inputs.clear();
  b.view_reads.clear();
}

// After greedy grouping: merge each loop with the loops it reads from, then
// loops that read the same buffer, whenever no cycle and no view read
// forbids it, so that a chain like AdamW's update is one pass over memory.
void Grouper::merge_groups() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!groups_[g].alive) continue;
      std::vector<int> ins = groups_[g].inputs;
      for (int in : ins) {
        int h = find(in);
        int self = find(int(g));
        if (h == self || !groups_[size_t(h)].alive) continue;
        if (can_merge(self, h)) {
          merge(self, h);
          changed = true;
        }
      }
    }
  }
  // Siblings: loops of the same space reading a common buffer.
  std::map<NodeId, std::vector<int>> readers;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!groups_[g].alive || groups_[g].kind != Group::Kind::loop) continue;
    for (NodeId m : groups_[g].members)
      for (NodeId x : g_[m].inputs) {
        NodeId r = root(x);
        if (g_[r].op == Op::full || (group_[size_t(r)] >= 0 && find(group_[size_t(r)]) == int(g))) continue;
        auto& v = readers[r];
        if (std::find(v.begin(), v.end(), int(g)) == v.end()) v.push_back(int(g));
      }
  }
  for (auto& [node, gs] : readers) {
    for (size_t i = 1; i < gs.size(); ++i) {
      int a = find(gs[0]), b = find(gs[i]);
      if (a == b || !groups_[size_t(a)].alive || !groups_[size_t(b)].alive) continue;
      if (!reaches(a, b) && !reaches(b, a) && can_merge(a, b)) merge(a, b);
    }
  }
  // Renumber: group_ and every group's inputs point to live groups.
  std::vector<int> renum(groups_.size(), -1);
  std::vector<Group> live;
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (!groups_[g].alive) continue;
    renum[g] = int(live.size());
    live.push_back(std::move(groups_[g]));
  }
  for (int& gid : group_)
    if (gid >= 0) gid = renum[size_t(find(gid))];
  for (Group& gr : live) {
    for (int& in : gr.inputs) in = renum[size_t(find(in))];
    gr.view_reads.clear();
  }
  groups_ = std::move(live);
  visit_mark_.assign(groups_.size(), 0);
  parent_.resize(groups_.size());
  for (size_t g = 0; g < parent_.size(); ++g) parent_[g] = int(g);
}

void Grouper::form_groups() {
  for (NodeId n = 0; n < NodeId(g_.size()); ++n) {
    const Node& nd = g_[n];
    if (nd.op == Op::parameter || nd.op == Op::constant || nd.op == Op::full || is_alias(nd.op) ||
        is_strided_view(nd.op))
      continue;
    switch (ir::op_class(nd.op)) {
      case ir::OpClass::elementwise: {
        int joined = -1;
        if (fuse_) {
          for (NodeId x : nd.inputs) {
            if (group_[size_t(x)] < 0) continue;
            int gid = find(group_[size_t(x)]);
            const Group& gr = groups_[size_t(gid)];
            // A loop that already ends in a reduction still takes nodes
            // computed alongside it (can_join keeps out those that read
            // the reduction's result).
            if (gr.kind != Group::Kind::loop || gr.iter != nd.shape) continue;
            if (can_join(n, gid)) {
              joined = gid;
              break;
            }
          }
        }
        if (joined < 0) joined = new_group(Group::Kind::loop, nd.shape);
        add_to(n, joined);
        break;
      }
      case ir::OpClass::reduction: {
        NodeId x = nd.inputs[0];
        int gid = group_[size_t(x)] >= 0 ? find(group_[size_t(x)]) : -1;
        int joined = -1;
        if (fuse_ && gid >= 0) {
          const Group& gr = groups_[size_t(gid)];
          if (gr.kind == Group::Kind::loop && gr.reduce < 0 && gr.iter == g_[x].shape && can_join(n, gid)) joined = gid;
        }
        if (joined < 0) joined = new_group(Group::Kind::loop, g_[x].shape);
        add_to(n, joined);
        groups_[size_t(joined)].reduce = n;
        break;
      }
      case ir::OpClass::source:
      case ir::OpClass::view:
      case ir::OpClass::opaque: {
        int gid = new_group(Group::Kind::opaque, nd.shape);
        add_to(n, gid);
        break;
      }
    }
  }
}

}  // namespace

Grouping group_nodes(const Graph& g, bool fuse) { return Grouper(g, fuse).run(); }

}  // namespace loupe::rt::compile
