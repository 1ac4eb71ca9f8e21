#include "loupe/view/lane_kinds.h"

namespace loupe::view {

namespace {

// Each kind's entry: where its events' names are, their colour and the
// describer of its table.
struct Spans {
  static const prof::StringId* names(const prof::TraceModel& m, uint32_t t) { return m.host_spans[t].name.data(); }
  static Color color(const prof::TraceModel& m, const TrackLane& tl, size_t e) {
    const std::string& name = m.str(m.host_spans[tl.table].name[e]);
    return span_color(m.host_spans[tl.table].kind[e], name_hash(name.data(), name.size()));
  }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_span(m, m.host_spans[t], i);
  }
};

struct Launches {
  static const prof::StringId* names(const prof::TraceModel& m, uint32_t t) { return m.launches[t].name.data(); }
  static Color color(const prof::TraceModel&, const TrackLane&, size_t) { return palette::launch; }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_launch(m, m.launches[t], i);
  }
};

struct Transfers {
  static const prof::StringId* names(const prof::TraceModel&, uint32_t) { return nullptr; }
  static Color color(const prof::TraceModel&, const TrackLane& tl, size_t) {
    return tl.synchronous ? palette::sync_transfer : palette::async_transfer;
  }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_transfer(m, m.transfers[t], i);
  }
};

struct DeviceOps {
  static const prof::StringId* names(const prof::TraceModel& m, uint32_t t) { return m.device_ops[t].name.data(); }
  static Color color(const prof::TraceModel& m, const TrackLane& tl, size_t e) {
    const prof::DeviceOps& o = m.device_ops[tl.table];
    return device_op_color(o.kind[e], o.copy_kind[e]);
  }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_device_op(m, m.device_ops[t], i);
  }
};

struct Instants {
  static const prof::StringId* names(const prof::TraceModel& m, uint32_t t) { return m.instants[t].name.data(); }
  static Color color(const prof::TraceModel&, const TrackLane&, size_t) { return palette::text; }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_instant(m, m.instants[t], i);
  }
};

struct Recompiles {
  static const prof::StringId* names(const prof::TraceModel& m, uint32_t t) { return m.compiles[t].function.data(); }
  static Color color(const prof::TraceModel&, const TrackLane&, size_t) { return palette::recompile; }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_compile(m, m.compiles[t], i);
  }
};

struct Collectives {
  static const prof::StringId* names(const prof::TraceModel& m, uint32_t t) { return m.collectives[t].name.data(); }
  static Color color(const prof::TraceModel&, const TrackLane&, size_t) { return palette::collective; }
  static EventDetails describe(const prof::TraceModel& m, uint32_t t, size_t i) {
    return describe_collective(m, m.collectives[t], i);
  }
};

template <typename Kind>
constexpr LaneKindInfo info_of() {
  return {Kind::names, Kind::color, Kind::describe};
}

}  // namespace

const LaneKindInfo& lane_kind_info(LaneKind kind) {
  static constexpr LaneKindInfo spans = info_of<Spans>(), launches = info_of<Launches>(),
                                transfers = info_of<Transfers>(), device_ops = info_of<DeviceOps>(),
                                instants = info_of<Instants>(), recompiles = info_of<Recompiles>(),
                                collectives = info_of<Collectives>();
  switch (kind) {
    case LaneKind::spans: return spans;
    case LaneKind::launches: return launches;
    case LaneKind::transfers: return transfers;
    case LaneKind::device_ops: return device_ops;
    case LaneKind::instants: return instants;
    case LaneKind::recompiles: return recompiles;
    case LaneKind::collectives: return collectives;
  }
  return spans;  // not reached: every kind is named above
}

const std::string& event_name(const prof::TraceModel& model, LaneKind kind, uint32_t table, size_t event) {
  static const std::string none;
  const prof::StringId* names = lane_kind_info(kind).names(model, table);
  return names ? model.str(names[event]) : none;
}

Color event_color(const prof::TraceModel& model, const TrackLane& lane, size_t event) {
  return lane_kind_info(lane.kind).color(model, lane, event);
}

}  // namespace loupe::view
