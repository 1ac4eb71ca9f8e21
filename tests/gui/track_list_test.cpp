// The viewer's core over a TraceModel built by hand: the track list and
// its layout, flows between launches and device operations, highlighting a
// name, recompile markers, tooltips' wording, hit testing a frame.
#include <gtest/gtest.h>

#include <map>

#include "loupe/view/event_details.h"
#include "loupe/view/flows.h"
#include "loupe/view/highlight.h"
#include "loupe/view/hit_test.h"
#include "loupe/view/lane_kinds.h"
#include "loupe/view/overlays.h"
#include "loupe/view/track_list.h"

namespace loupe::view {
namespace {

using namespace loupe::prof;

// Thread 0: spans step [0,1000) > fwd [100,400), bwd [500,900); launches of
// two kernels (correlation 7 and 8) and a synchronous 4-byte read-back.
// Device 0 stream 0: the kernels [150,300) and [520,880). A memory track
// and a counter.
TraceModel small_model() {
  TraceModel m;
  m.strings = {"", "step", "fwd", "bwd", "launch", "k1", "k2", "f", "loss", "sig a", "sig b", "main.cpp", "main"};
  m.threads.push_back({.id = 0, .process = 1, .os_tid = 1, .name = "main", .dropped_events = 0});
  m.devices.push_back({.id = 0, .name = "gpu", .kind = DeviceKind::cuda, .memory_capacity = 1000, .copy_bandwidth = 0});
  m.streams.push_back({.device = 0, .stream = 0, .name = "compute"});
  m.callsites.push_back({.id = 1, .file = 11, .line = 88, .function = 12});
  HostSpans s;
  s.thread = 0;
  s.start = {0, 100, 500};
  s.dur = {1000, 300, 400};
  s.name = {1, 2, 3};
  s.kind = {SpanKind::user, SpanKind::user, SpanKind::user};
  s.depth = {0, 1, 1};
  s.callsite = {0, 0, 1};
  m.host_spans.push_back(s);
  Launches l;
  l.thread = 0;
  l.start = {110, 510};
  l.dur = {10, 10};
  l.name = {4, 4};
  l.device = {0, 0};
  l.stream = {0, 0};
  l.correlation = {7, 8};
  m.launches.push_back(l);
  Transfers t;
  t.thread = 0;
  t.start = {900};
  t.dur = {50};
  t.device = {0};
  t.direction = {CopyKind::device_to_host};
  t.bytes = {4};
  t.synchronous = {1};
  t.implicit = {1};
  t.host_memory = {HostMemory::pageable};
  t.callsite = {1};
  t.correlation = {0};
  m.transfers.push_back(t);
  DeviceOps o;
  o.device = 0;
  o.stream = 0;
  o.start = {150, 520};
  o.dur = {150, 360};
  o.kind = {DeviceOpKind::kernel, DeviceOpKind::kernel};
  o.name = {5, 6};
  o.bytes = {0, 0};
  o.copy_kind = {CopyKind::none, CopyKind::none};
  o.correlation = {7, 8};
  m.device_ops.push_back(o);
  MemoryEvents me;
  me.device = 0;
  me.time = {100, 200, 600};
  me.kind = {MemoryEventKind::alloc, MemoryEventKind::alloc, MemoryEventKind::free};
  me.bytes = {100, 300, 100};
  me.address = {1, 2, 1};
  me.allocated = {100, 400, 300};
  me.reserved = {512, 512, 512};
  me.callsite = {0, 0, 0};
  m.memory.push_back(me);
  Counter c;
  c.name = 8;
  c.time = {1000};
  c.value = {0.5};
  m.counters.push_back(c);
  Compiles cp;
  cp.thread = 0;
  cp.start = {0, 50, 60};
  cp.dur = {40, 5, 30};
  cp.function = {7, 7, 7};
  cp.signature = {9, 9, 10};
  cp.kind = {CompileKind::miss, CompileKind::hit, CompileKind::miss};
  cp.reason = {"first compile", "", "arg 0: now sig b"};
  cp.trace_ns = {1, 0, 2};
  cp.optimize_ns = {1, 0, 2};
  cp.codegen_ns = {1, 0, 2};
  cp.nodes = {1, 1, 1};
  cp.kernels = {1, 1, 1};
  cp.ir = {"", "", ""};
  cp.callsite = {0, 0, 0};
  cp.function_object = {1, 1, 1};
  m.compiles.push_back(cp);
  Steps st;
  st.thread = 0;
  st.start = {20};
  st.dur = {980};
  st.number = {0};
  m.steps.push_back(st);
  m.start_ns = 0;
  m.end_ns = 1000;
  return m;
}

TEST(TrackList, OneTrackPerThreadStreamMemoryAndCounter) {
  TraceModel m = small_model();
  TrackList list = build_track_list(m);
  ASSERT_EQ(list.tracks.size(), 5u);
  const Track& th = list.tracks[0];
  EXPECT_EQ(th.kind, TrackKind::thread);
  EXPECT_EQ(th.title, "main");
  // Marker row (the recompile), depth 0, depth 1, launches, sync transfers.
  ASSERT_EQ(th.lanes.size(), 5u);
  EXPECT_EQ(th.lanes[0].kind, LaneKind::recompiles);
  EXPECT_EQ(th.lanes[1].kind, LaneKind::spans);
  EXPECT_EQ(th.lanes[1].depth, 0u);
  EXPECT_EQ(th.lanes[2].depth, 1u);
  EXPECT_EQ(th.lanes[2].lane.size(), 2u);
  EXPECT_EQ(th.lanes[3].kind, LaneKind::launches);
  EXPECT_EQ(th.lanes[4].kind, LaneKind::transfers);
  EXPECT_TRUE(th.lanes[4].synchronous);
  EXPECT_EQ(list.tracks[1].kind, TrackKind::stream);
  EXPECT_EQ(list.tracks[1].title, "device 0 / compute");
  EXPECT_EQ(list.tracks[1].subtitle, "gpu");
  // Under the stream, its launch queue: each kernel launched and not yet
  // started, 1 from its launch to its start (110..150, 510..520).
  const Track& queue = list.tracks[2];
  EXPECT_EQ(queue.kind, TrackKind::counter);
  EXPECT_EQ(queue.title, "device 0 / compute: launch queue");
  ASSERT_EQ(queue.value.count, 4u);
  EXPECT_EQ(std::vector<int64_t>(queue.value.time, queue.value.time + 4), (std::vector<int64_t>{110, 150, 510, 520}));
  EXPECT_EQ(queue.value.max_value, 1);
  EXPECT_EQ(queue.value.values.value(1), 0);
  EXPECT_EQ(list.tracks[3].kind, TrackKind::memory);
  EXPECT_EQ(list.tracks[3].allocated.max_value, 400);
  EXPECT_EQ(list.tracks[3].allocated.max_index, 1u);
  EXPECT_EQ(list.tracks[3].capacity, 1000);
  EXPECT_EQ(list.tracks[4].kind, TrackKind::counter);
  EXPECT_EQ(list.tracks[4].title, "loss");
}

// The memory lane marks each out-of-memory event: here the fourth.
TEST(TrackList, MemoryTrackListsItsOutOfMemoryEvents) {
  TraceModel m = small_model();
  MemoryEvents& me = m.memory[0];
  me.time.push_back(700);
  me.kind.push_back(MemoryEventKind::oom);
  me.bytes.push_back(900);
  me.address.push_back(0);
  me.allocated.push_back(300);
  me.reserved.push_back(512);
  me.callsite.push_back(0);
  TrackList list = build_track_list(m);
  ASSERT_EQ(list.tracks[3].kind, TrackKind::memory);
  EXPECT_EQ(list.tracks[3].out_of_memory, std::vector<size_t>{3});
  EXPECT_TRUE(build_track_list(small_model()).tracks[3].out_of_memory.empty());
}

TEST(TrackList, LayoutStacksLanesAndTracks) {
  TraceModel m = small_model();
  TrackList list = build_track_list(m);
  TrackMetrics tm{.lane = 18, .marker = 9, .memory = 64, .counter = 40, .spacing = 6};
  float bottom = layout_tracks(list, tm, 10);
  const Track& th = list.tracks[0];
  EXPECT_FLOAT_EQ(th.y0, 10);
  EXPECT_FLOAT_EQ(th.lanes[0].y0, 10);  // markers 10..19
  EXPECT_FLOAT_EQ(th.lanes[1].y0, 19);  // depth 0: 19..37
  EXPECT_FLOAT_EQ(th.lanes[2].y0, 37);  // depth 1: 37..55
  EXPECT_FLOAT_EQ(th.lanes[4].y1, 91);  // launches 55..73, transfers 73..91
  EXPECT_FLOAT_EQ(th.y1, 91);
  EXPECT_FLOAT_EQ(list.tracks[1].y0, 97);  // + spacing
  EXPECT_FLOAT_EQ(list.tracks[1].y1, 115);
  EXPECT_FLOAT_EQ(list.tracks[2].y0, 121);  // the launch queue 121..161, + 6
  EXPECT_FLOAT_EQ(list.tracks[3].y0, 167);
  EXPECT_FLOAT_EQ(list.tracks[4].y0, 237);  // memory 167..231, + 6
  EXPECT_FLOAT_EQ(bottom, 283);             // counter 237..277, + 6
}

TEST(TrackList, HitTestFindsTheSpanUnderTheMouse) {
  TraceModel m = small_model();
  TrackList list = build_track_list(m);
  layout_tracks(list, TrackMetrics{}, 0);
  TimeAxis axis{.start_ns = 0, .ns_per_px = 1, .x0 = 0, .width = 1000};
  FrameItems frame;
  frame.reset(list);
  for (size_t t = 0; t < list.tracks.size(); ++t)
    for (size_t l = 0; l < list.tracks[t].lanes.size(); ++l)
      lane_items(list.tracks[t].lanes[l].lane, axis, 3, frame.items[t][l]);
  // Depth 1 is the third row (markers 0..9, depth 0 9..27, depth 1 27..45).
  Hit h = hit_test(list, frame, 600, 30, 2);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.track, 0);
  EXPECT_EQ(h.lane, 2);
  EXPECT_EQ(list.tracks[0].lanes[2].lane.event(frame.items[0][2][size_t(h.item)].first), 2u);  // bwd
  // Between fwd and bwd: nothing.
  EXPECT_FALSE(hit_test(list, frame, 450, 30, 2).ok());
  // The recompile marker at 60, within a few pixels.
  h = hit_test(list, frame, 62, 4, 2);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.lane, 0);
  // Below every track.
  EXPECT_FALSE(hit_test(list, frame, 600, 5000, 2).ok());
}

TEST(Flows, LaunchAndDeviceOpFindEachOther) {
  TraceModel m = small_model();
  auto op = device_op_of_launch(m, 0, 1);
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->table, 0u);
  EXPECT_EQ(op->index, 1u);
  auto launch = launch_of_device_op(m, 0, 0);
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->index, 0u);
  m.transfers[0].correlation[0] = 8;  // the read-back is the second kernel, say
  auto copy = device_op_of_transfer(m, 0, 0);
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(copy->index, 1u);
  m.device_ops[0].correlation[1] = 99;  // no longer matches
  EXPECT_FALSE(device_op_of_launch(m, 0, 1).has_value());
  EXPECT_FALSE(launch_of_device_op(m, 0, 1).has_value());
  EXPECT_FALSE(device_op_of_launch(m, 5, 0).has_value());
  EXPECT_FALSE(device_op_of_transfer(m, 0, 0).has_value());
}

TEST(Highlight, ANameBecomesSubLanes) {
  TraceModel m = small_model();
  TrackList list = build_track_list(m);
  NameHighlight h = highlight_name(m, list, "bwd");
  EXPECT_EQ(h.matches, 1u);
  ASSERT_EQ(h.lanes[0][2].size(), 1u);
  EXPECT_EQ(h.lanes[0][2].start_at(0), 500);
  EXPECT_EQ(highlight_name(m, list, "k2").matches, 1u);
  EXPECT_EQ(highlight_name(m, list, "nothing").matches, 0u);
}

// A process group's collectives are a track of their own, after the
// devices': a gloo all-reduce run on the host and an NCCL one on stream 0,
// overlapping, in two lanes.
TEST(TrackList, AProcessGroupsCollectivesAreATrack) {
  TraceModel m = small_model();
  size_t group = m.strings.size();
  m.strings.insert(m.strings.end(), {"0", "allreduce", "nccl:all_reduce"});
  Collectives c;
  c.process_group = StringId(group);
  c.start = {100, 150};
  c.dur = {300, 100};
  c.name = {StringId(group + 1), StringId(group + 2)};
  c.in_bytes = {4096, 1 << 20};
  c.out_bytes = {4096, 1 << 20};
  c.group_size = {2, 8};
  c.issued = {100, 140};
  c.on_device = {0, 1};
  c.device = {0, 0};
  c.stream = {0, 0};
  m.collectives.push_back(c);
  TrackList list = build_track_list(m);
  ASSERT_EQ(list.tracks.size(), 6u);
  const Track& t = list.tracks[4];  // after the stream, its queue and the memory, before the counter
  EXPECT_EQ(t.kind, TrackKind::collectives);
  EXPECT_EQ(t.title, "collectives / group 0");
  ASSERT_EQ(t.lanes.size(), 2u);
  EXPECT_EQ(t.lanes[0].kind, LaneKind::collectives);
  EXPECT_EQ(event_name(m, LaneKind::collectives, 0, 1), "nccl:all_reduce");
  EXPECT_EQ(event_color(m, t.lanes[0], 0), palette::collective);
  EventDetails d = describe_event(m, LaneKind::collectives, 0, 1);
  EXPECT_EQ(d.title, "nccl:all_reduce");
  EXPECT_EQ(d.end, 250);
  std::map<std::string, std::string> lines(d.lines.begin(), d.lines.end());
  EXPECT_EQ(lines["ranks"], "8");
  EXPECT_EQ(lines["in"], "1.0 MiB");
  EXPECT_EQ(lines["on"], "device 0 stream 0");
  EventDetails gloo = describe_event(m, LaneKind::collectives, 0, 0);
  EXPECT_EQ(gloo.lines.back(), (std::pair<std::string, std::string>{"on", "the host"}));
  EXPECT_EQ(highlight_name(m, list, "allreduce").matches, 1u);
  layout_tracks(list, TrackMetrics{}, 0);
  EXPECT_EQ(list.tracks[4].y1 - list.tracks[4].y0, 2 * TrackMetrics{}.lane);
}

TEST(Recompiles, MissesAfterTheFirstOfAFunction) {
  TraceModel m = small_model();
  EXPECT_EQ(recompile_indices(m, 0), (std::vector<uint32_t>{2}));
}

TEST(EventDetails, WordsEventsWithTheProfilersUnits) {
  TraceModel m = small_model();
  EventDetails t = describe_event(m, LaneKind::transfers, 0, 0);
  EXPECT_EQ(t.title, "DtoH transfer (synchronous)");
  auto line = [&](const EventDetails& d, const std::string& what) {
    for (const auto& [k, v] : d.lines)
      if (k == what) return v;
    return std::string("(none)");
  };
  EXPECT_EQ(line(t, "bytes"), "4 B");
  EXPECT_EQ(line(t, "duration"), "50 ns");
  EXPECT_EQ(line(t, "call site"), "main.cpp:88 in main");
  EXPECT_EQ(line(t, "host memory"), "pageable");
  EventDetails c = describe_event(m, LaneKind::recompiles, 0, 2);
  EXPECT_EQ(c.title, "compile of f");
  EXPECT_EQ(line(c, "kind"), "miss");
  EXPECT_EQ(line(c, "signature"), "sig b");
  EXPECT_EQ(line(c, "reason"), "arg 0: now sig b");
  EventDetails k = describe_event(m, LaneKind::device_ops, 0, 1);
  EXPECT_EQ(k.title, "k2");
  EXPECT_EQ(k.end, 880);
}

TEST(Overlays, GapsBecomeALaneAndTracesAlignAtTheFirstStep) {
  AnalysisReport r;
  DeviceIdle d;
  d.device = 3;
  d.gaps = {{100, 200, GapCause::compile, ""}, {500, 800, GapCause::sync, ""}};
  r.devices.push_back(d);
  std::vector<DeviceGaps> g = device_gaps(r);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].device, 3u);
  EXPECT_EQ(g[0].lane.size(), 2u);
  EXPECT_EQ(g[0].lane.end_at(1), 800);
  std::vector<DeviceGaps> moved = std::move(g);  // the lane still reads the columns
  EXPECT_EQ(moved[0].lane.start_at(1), 500);
  EXPECT_EQ(alignment_origin(small_model()), 20);
}

// The path's stretches land on the thread's and the stream's tracks; one
// on a thread the list has no track for is left out.
TEST(Overlays, TheCriticalPathLandsOnTheTracksItRanOn) {
  TraceModel m = small_model();
  TrackList list = build_track_list(m);
  CriticalPath p;
  p.segments = {
      {.start = 0, .end = 100, .thread = 0},
      {.start = 100, .end = 200, .category = PathCategory::kernel, .on_device = true, .device = 0, .stream = 0},
      {.start = 200, .end = 300, .thread = 9}};
  std::vector<PathBar> bars = critical_path_bars(p, list);
  ASSERT_EQ(bars.size(), 2u);
  EXPECT_EQ(list.tracks[bars[0].track].kind, TrackKind::thread);
  EXPECT_EQ(list.tracks[bars[0].track].thread, 0u);
  EXPECT_EQ(list.tracks[bars[1].track].kind, TrackKind::stream);
  EXPECT_EQ(bars[1].category, PathCategory::kernel);
  EXPECT_EQ(first_bar_after(bars, 150), 1u);
  EXPECT_EQ(first_bar_after(bars, 100), 1u);
  EXPECT_EQ(first_bar_after(bars, 250), 2u);
}

}  // namespace
}  // namespace loupe::view

namespace loupe::view {
namespace {

TEST(TrackList, LocatesAnEventsLane) {
  prof::TraceModel m = small_model();
  TrackList list = build_track_list(m);
  EventLocation where;
  ASSERT_TRUE(locate_event(list, LaneKind::spans, 0, 2, &where));  // bwd: depth 1, second
  EXPECT_EQ(where.track, 0u);
  EXPECT_EQ(where.lane, 2u);
  EXPECT_EQ(where.position, 1u);
  ASSERT_TRUE(locate_event(list, LaneKind::device_ops, 0, 1, &where));
  EXPECT_EQ(where.track, 1u);
  EXPECT_EQ(where.position, 1u);
  EXPECT_FALSE(locate_event(list, LaneKind::recompiles, 0, 0, &where));  // the first compile is no recompile
  EXPECT_TRUE(locate_event(list, LaneKind::recompiles, 0, 2, &where));
}

}  // namespace
}  // namespace loupe::view
