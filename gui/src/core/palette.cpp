#include "loupe/view/palette.h"

namespace loupe::view {

Color gap_color(prof::GapCause cause) {
  switch (cause) {
    case prof::GapCause::compile: return rgba(150, 60, 190);
    case prof::GapCause::sync: return rgba(200, 50, 60);
    case prof::GapCause::host_work: return rgba(205, 130, 30);
    case prof::GapCause::launch: return rgba(190, 180, 40);
    case prof::GapCause::between_ops: return rgba(215, 165, 90);
    case prof::GapCause::device_wait: return rgba(40, 150, 150);
    case prof::GapCause::unknown: return rgba(95, 95, 105);
  }
  return rgba(95, 95, 105);
}

Color path_color(prof::PathCategory category) {
  switch (category) {
    case prof::PathCategory::host_compute: return rgba(205, 130, 30);
    case prof::PathCategory::data_loading: return rgba(230, 210, 80);
    case prof::PathCategory::launch_overhead: return rgba(190, 180, 40);
    case prof::PathCategory::kernel: return rgba(70, 190, 110);
    case prof::PathCategory::copy: return rgba(64, 156, 255);
    case prof::PathCategory::communication: return rgba(190, 120, 230);
    case prof::PathCategory::synchronisation: return rgba(200, 50, 60);
  }
  return rgba(95, 95, 105);
}

Color memory_category_color(std::string_view category) {
  if (category == "activation") return rgba(235, 150, 50, 220);
  if (category == "temporary") return rgba(150, 150, 165, 220);
  if (category == "gradient") return rgba(200, 80, 160, 220);
  if (category == "optimizer state") return rgba(90, 190, 120, 220);
  if (category == "input data") return rgba(230, 210, 80, 220);
  return palette::allocated;
}

Color device_op_color(prof::DeviceOpKind kind, prof::CopyKind copy) {
  using prof::CopyKind;
  using prof::DeviceOpKind;
  switch (kind) {
    case DeviceOpKind::kernel: return rgba(58, 130, 200);
    case DeviceOpKind::memset: return rgba(150, 150, 90);
    case DeviceOpKind::sync: return rgba(110, 110, 120);
    case DeviceOpKind::other: return rgba(120, 120, 140);
    case DeviceOpKind::memcpy:
      switch (copy) {
        case CopyKind::host_to_device: return rgba(60, 170, 90);
        case CopyKind::device_to_host: return rgba(230, 110, 40);
        case CopyKind::device_to_device: return rgba(150, 100, 200);
        case CopyKind::peer_to_peer: return rgba(200, 90, 170);
        case CopyKind::none:
        case CopyKind::host_to_host: return rgba(120, 160, 120);
      }
  }
  return rgba(120, 120, 140);
}

Color span_color(prof::SpanKind kind, uint32_t hash) {
  switch (kind) {
    case prof::SpanKind::wait: return rgba(170, 60, 60);
    case prof::SpanKind::compile: return rgba(140, 70, 180);
    case prof::SpanKind::runtime:
    case prof::SpanKind::user:
    case prof::SpanKind::timing: break;
  }
  // Muted hues for user and runtime spans, picked by name.
  static constexpr Color hues[] = {
      rgba(70, 110, 150), rgba(80, 130, 110), rgba(120, 110, 70), rgba(110, 90, 130),
      rgba(70, 125, 130), rgba(130, 95, 85),  rgba(95, 120, 80),  rgba(85, 100, 140),
  };
  return hues[hash % (sizeof hues / sizeof hues[0])];
}

uint32_t name_hash(const char* text, size_t size) {
  uint32_t h = 2166136261u;  // FNV-1a
  for (size_t i = 0; i < size; ++i) h = (h ^ uint8_t(text[i])) * 16777619u;
  return h;
}

}  // namespace loupe::view
