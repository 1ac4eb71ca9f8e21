// The runtime's CUPTI collector: started when a capture starts in a
// process with a GPU device (or at the device's first launch while one is
// active), stopped (and flushed) when that capture stops, so that kernels
// and copies carry the GPU's own times in the trace. CUPTI itself stays
// switched on from the first capture to the process's end (switching it on
// is what costs most, and a training loop may capture many windows); what
// it records between captures is dropped (docs/gpu.md, "CUPTI").
//
// It stays off when LOUPE_CUPTI=0, when libloupe_inject.so records CUPTI in
// this process already (`loupe capture`), and for good once CUPTI refused
// (another tool, such as Nsight Systems, holds it); device times then come
// from CUDA events.
#pragma once

namespace loupe::rt::backend::cuda {

// Called when a GPU device is created: from then on each capture starts
// the collector as it starts (so that it covers the whole capture) and
// stops it as it stops.
void cupti_session_attach();

// Whether CUPTI records the device's work now, starting it if a capture is
// active and it is not running yet.
bool cupti_session_recording();
// Flushes what CUPTI holds into the capture and stops the collector (at
// exit, while the CUDA runtime is still up).
void cupti_session_stop();

}  // namespace loupe::rt::backend::cuda
