#include "loupe/view/track_list.h"

#include <algorithm>
#include <unordered_set>

#include "loupe/prof/analysis.h"

namespace loupe::view {

namespace {

using prof::TraceModel;

template <typename Tables>
const typename Tables::value_type* by_thread(const Tables& tables, uint32_t thread, uint32_t* index) {
  for (size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].thread == thread) {
      *index = uint32_t(i);
      return &tables[i];
    }
  }
  return nullptr;
}

Series make_series(const std::vector<int64_t>& time, const int64_t* values, const double* dvalues) {
  Series s;
  s.time = time.data();
  s.count = time.size();
  s.values = values ? RangeMinMax(values, s.count) : RangeMinMax(dvalues, s.count);
  for (size_t i = 0; i < s.count; ++i) {
    double v = s.values.value(i);
    if (i == 0 || v > s.max_value) {
      s.max_value = v;
      s.max_index = i;
    }
  }
  return s;
}

std::string thread_title(const TraceModel& m, uint32_t id) {
  const prof::Thread* t = m.thread(id);
  if (t && !t->name.empty()) return t->name;
  return "thread " + std::to_string(id);
}

std::string device_name(const TraceModel& m, uint32_t id) {
  const prof::Device* d = m.device(id);
  return d ? d->name : "";
}

}  // namespace

std::vector<uint32_t> recompile_indices(const TraceModel& model, uint32_t table) {
  // Order every miss in time over all threads; a function's first miss is
  // its compile, later ones are recompiles.
  struct Miss {
    int64_t start;
    uint32_t table, index;
    prof::StringId function;
  };
  std::vector<Miss> misses;
  for (uint32_t t = 0; t < model.compiles.size(); ++t) {
    const prof::Compiles& c = model.compiles[t];
    for (size_t i = 0; i < c.size(); ++i) {
      if (c.kind[i] == prof::CompileKind::miss) misses.push_back({c.start[i], t, uint32_t(i), c.function[i]});
    }
  }
  std::stable_sort(misses.begin(), misses.end(), [](const Miss& a, const Miss& b) { return a.start < b.start; });
  std::unordered_set<prof::StringId> seen;
  std::vector<uint32_t> out;
  for (const Miss& m : misses) {
    bool first = seen.insert(m.function).second;
    if (!first && m.table == table) out.push_back(m.index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// A host thread's track: its instants, recompiles, spans (packed into
// lanes by depth), launches and transfers.
Track thread_track(const TraceModel& model, uint32_t id) {
  Track track{.kind = TrackKind::thread, .title = thread_title(model, id), .thread = id};
  uint32_t table = 0;
  if (const auto* inst = by_thread(model.instants, id, &table); inst && inst->size()) {
    TrackLane tl{LaneKind::instants, table};
    tl.marker_row = true;
    tl.lane = whole_lane(inst->time.data(), nullptr, inst->size());
    track.lanes.push_back(std::move(tl));
  }
  if (const auto* comp = by_thread(model.compiles, id, &table); comp && comp->size()) {
    std::vector<uint32_t> idx = recompile_indices(model, table);
    if (!idx.empty()) {
      TrackLane tl{LaneKind::recompiles, table};
      tl.marker_row = true;
      tl.lane.start = comp->start.data();
      tl.lane.dur = nullptr;  // a marker at the compile's start
      tl.lane.count = idx.size();
      tl.lane.index = std::move(idx);
      index_lane(tl.lane);
      track.lanes.push_back(std::move(tl));
    }
  }
  if (const auto* spans = by_thread(model.host_spans, id, &table); spans && spans->size()) {
    PackedLanes p = pack_lanes(spans->start.data(), spans->dur.data(), spans->size(), spans->depth.data());
    for (size_t i = 0; i < p.lanes.size(); ++i) {
      TrackLane tl{LaneKind::spans, table, p.group[i]};
      tl.lane = std::move(p.lanes[i]);
      track.lanes.push_back(std::move(tl));
    }
  }
  if (const auto* l = by_thread(model.launches, id, &table); l && l->size()) {
    PackedLanes p = pack_lanes(l->start.data(), l->dur.data(), l->size(), nullptr, 4);
    for (auto& lane : p.lanes) {
      TrackLane tl{LaneKind::launches, table};
      tl.lane = std::move(lane);
      track.lanes.push_back(std::move(tl));
    }
  }
  if (const auto* tr = by_thread(model.transfers, id, &table); tr && tr->size()) {
    // Synchronous transfers in lanes of their own, so that a merged run
    // of them is still known to be synchronous.
    std::vector<uint32_t> sync(tr->size());
    for (size_t i = 0; i < tr->size(); ++i) sync[i] = tr->synchronous[i] ? 1 : 0;
    PackedLanes p = pack_lanes(tr->start.data(), tr->dur.data(), tr->size(), sync.data(), 4);
    for (size_t i = 0; i < p.lanes.size(); ++i) {
      TrackLane tl{LaneKind::transfers, table};
      tl.synchronous = p.group[i] == 1;
      tl.lane = std::move(p.lanes[i]);
      track.lanes.push_back(std::move(tl));
    }
  }
  return track;
}

// The events of a table as lanes of `kind`, overlapping ones in up to
// `max_lanes` lanes.
template <typename Table>
void add_packed_lanes(Track& track, LaneKind kind, uint32_t table, const Table& events, size_t max_lanes) {
  PackedLanes p = pack_lanes(events.start.data(), events.dur.data(), events.size(), nullptr, max_lanes);
  for (auto& lane : p.lanes) {
    TrackLane tl{kind, table};
    tl.lane = std::move(lane);
    track.lanes.push_back(std::move(tl));
  }
}

// A device's tracks: one per stream, then its memory.
// The memory lane marks these.
std::vector<size_t> out_of_memory_events(const prof::MemoryEvents& me) {
  std::vector<size_t> out;
  for (size_t i = 0; i < me.size(); ++i)
    if (me.kind[i] == prof::MemoryEventKind::oom) out.push_back(i);
  return out;
}

// A device's memory lane: allocated and reserved, and the trace's blocks
// by category stacked from the bottom.
Track memory_track(const TraceModel& model, uint32_t dev, uint32_t table) {
  const prof::MemoryEvents& me = model.memory[table];
  const prof::Device* d = model.device(dev);
  Track t{.kind = TrackKind::memory,
          .title = "device " + std::to_string(dev) + " / memory",
          .subtitle = device_name(model, dev),
          .device = dev,
          .table = table,
          .allocated = make_series(me.time, me.allocated.data(), nullptr),
          .reserved = make_series(me.time, me.reserved.data(), nullptr),
          .capacity = d ? d->memory_capacity : 0,
          .out_of_memory = out_of_memory_events(me)};
  auto stacked = std::make_shared<std::vector<std::vector<int64_t>>>();
  for (prof::CategoryOverTime& c : prof::memory_categories_over_time(model, table)) {
    if (!stacked->empty())
      for (size_t i = 0; i < c.bytes.size(); ++i) c.bytes[i] += stacked->back()[i];
    t.category_names.push_back(std::move(c.category));
    stacked->push_back(std::move(c.bytes));
  }
  for (const std::vector<int64_t>& s : *stacked) t.categories.push_back(make_series(me.time, s.data(), nullptr));
  t.stacked = std::move(stacked);
  return t;
}

// A stream's launch queue (analysis.h), as a counter track under it; the
// track holds the series it draws.
Track queue_track(const std::string& stream_title, prof::LaunchQueue queue) {
  auto data = std::make_shared<std::vector<std::vector<int64_t>>>();
  data->push_back(std::move(queue.time));
  data->push_back(std::move(queue.length));
  Track t{.kind = TrackKind::counter,
          .title = stream_title + ": launch queue",
          .device = queue.device,
          .stream = queue.stream};
  t.value = make_series((*data)[0], (*data)[1].data(), nullptr);
  t.stacked = std::move(data);
  return t;
}

void add_device_tracks(const TraceModel& model, uint32_t dev, std::vector<prof::LaunchQueue>& queues, TrackList& list) {
  for (uint32_t table = 0; table < model.device_ops.size(); ++table) {
    const prof::DeviceOps& ops = model.device_ops[table];
    if (ops.device != dev || ops.size() == 0) continue;
    const prof::Stream* s = model.stream(dev, ops.stream);
    std::string stream_name = s && !s->name.empty() ? s->name : "stream " + std::to_string(ops.stream);
    Track track{.kind = TrackKind::stream,
                .title = "device " + std::to_string(dev) + " / " + stream_name,
                .subtitle = device_name(model, dev),
                .device = dev,
                .stream = ops.stream};
    add_packed_lanes(track, LaneKind::device_ops, table, ops, 8);
    std::string title = track.title;
    list.tracks.push_back(std::move(track));
    auto q = std::find_if(queues.begin(), queues.end(), [&](const prof::LaunchQueue& l) {
      return l.device == dev && l.stream == ops.stream && !l.time.empty();
    });
    if (q != queues.end()) list.tracks.push_back(queue_track(title, std::move(*q)));
  }
  for (uint32_t table = 0; table < model.memory.size(); ++table) {
    const prof::MemoryEvents& me = model.memory[table];
    if (me.device != dev || me.size() == 0) continue;
    list.tracks.push_back(memory_track(model, dev, table));
  }
}

void add_counter_tracks(const TraceModel& model, TrackList& list) {
  for (uint32_t table = 0; table < model.counters.size(); ++table) {
    const prof::Counter& c = model.counters[table];
    if (c.size() == 0) continue;
    list.tracks.push_back({.kind = TrackKind::counter,
                           .title = model.str(c.name),
                           .table = table,
                           .value = make_series(c.time, nullptr, c.value.data())});
  }
}

// A track per process group: the collectives this rank took part in (NCCL
// or RCCL kernels, gloo calls), which the device tracks show only as
// kernels, and a host-side backend not at all.
void add_collective_tracks(const TraceModel& model, TrackList& list) {
  for (uint32_t table = 0; table < model.collectives.size(); ++table) {
    const prof::Collectives& c = model.collectives[table];
    if (c.size() == 0) continue;
    const std::string& group = model.str(c.process_group);
    Track track{.kind = TrackKind::collectives,
                .title = group.empty() ? "collectives" : "collectives / group " + group,
                .table = table};
    add_packed_lanes(track, LaneKind::collectives, table, c, 4);
    list.tracks.push_back(std::move(track));
  }
}

}  // namespace

TrackList build_track_list(const TraceModel& model) {
  TrackList list;
  // Host threads: every thread that has any event, in id order.
  std::vector<uint32_t> threads;
  for (const auto& t : model.threads) threads.push_back(t.id);
  auto add_ids = [&](const auto& tables) {
    for (const auto& t : tables) threads.push_back(t.thread);
  };
  add_ids(model.host_spans);
  add_ids(model.launches);
  add_ids(model.transfers);
  add_ids(model.instants);
  add_ids(model.compiles);
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  for (uint32_t id : threads) {
    Track track = thread_track(model, id);
    if (!track.lanes.empty()) list.tracks.push_back(std::move(track));
  }

  // Devices: their streams, then their memory.
  std::vector<uint32_t> devices;
  for (const auto& d : model.devices) devices.push_back(d.id);
  for (const auto& o : model.device_ops) devices.push_back(o.device);
  for (const auto& m : model.memory) devices.push_back(m.device);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  std::vector<prof::LaunchQueue> queues = prof::launch_queues(model);
  for (uint32_t dev : devices) add_device_tracks(model, dev, queues, list);
  add_collective_tracks(model, list);
  add_counter_tracks(model, list);
  return list;
}

bool locate_event(const TrackList& list, LaneKind kind, uint32_t table, size_t index, EventLocation* where) {
  for (size_t t = 0; t < list.tracks.size(); ++t) {
    const Track& track = list.tracks[t];
    for (size_t l = 0; l < track.lanes.size(); ++l) {
      const TrackLane& tl = track.lanes[l];
      if (tl.kind != kind || tl.table != table) continue;
      const Lane& lane = tl.lane;
      if (lane.identity) {
        if (index < lane.size()) {
          *where = {t, l, index};
          return true;
        }
        continue;
      }
      // Positions are in start order: search the event's start, then the
      // events sharing it.
      size_t k = first_starting_at(lane, 0, lane.start[index]);
      for (; k < lane.size() && lane.start_at(k) == lane.start[index]; ++k) {
        if (lane.event(k) == index) {
          *where = {t, l, k};
          return true;
        }
      }
    }
  }
  return false;
}

float layout_tracks(TrackList& list, const TrackMetrics& m, float top) {
  float y = top;
  for (Track& t : list.tracks) {
    t.y0 = y;
    switch (t.kind) {
      case TrackKind::thread:
      case TrackKind::stream:
      case TrackKind::collectives: {
        bool has_markers = false;
        for (const TrackLane& l : t.lanes) has_markers |= l.marker_row;
        float row = y;
        if (has_markers) {
          for (TrackLane& l : t.lanes) {
            if (!l.marker_row) continue;
            l.y0 = row;
            l.y1 = row + m.marker;
          }
          row += m.marker;
        }
        for (TrackLane& l : t.lanes) {
          if (l.marker_row) continue;
          l.y0 = row;
          l.y1 = row + m.lane;
          row += m.lane;
        }
        y = row;
        break;
      }
      case TrackKind::memory: y += m.memory + (t.categories.empty() ? 0 : m.legend); break;
      case TrackKind::counter: y += m.counter; break;
    }
    t.y1 = y;
    y += m.spacing;
  }
  list.height = y - top;
  return y;
}

}  // namespace loupe::view
