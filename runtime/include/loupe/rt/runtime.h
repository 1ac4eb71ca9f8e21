// loupe's runtime: arrays on devices, ops, jit, grad, AdamW. Include this.
//
//   #include "loupe/rt/runtime.h"
//   namespace rt = loupe::rt;
//
// docs/runtime.md explains how to write a program against it and what a
// capture (LOUPE_TRACE=out.db ./program) records.
#pragma once

#include "loupe/rt/array.h"
#include "loupe/rt/device.h"
#include "loupe/rt/dtype.h"
#include "loupe/rt/errors.h"
#include "loupe/rt/jit.h"
#include "loupe/rt/ops.h"
#include "loupe/rt/optim.h"
#include "loupe/rt/random.h"
#include "loupe/rt/shape.h"
#include "loupe/rt/transforms.h"
#include "loupe/rt/tree.h"
