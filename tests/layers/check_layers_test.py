#!/usr/bin/env python3
"""check_layers.py on a made-up tree of three layers (low <- high <- third)
with exactly four includes that cross a boundary, written down by hand:
  - low.cpp includes the public header of high, a layer above it;
  - low/sneaky.h includes an internal header of high;
  - third.cpp includes an internal header of low, which it does not link
    (low's public header is fine there: high's public header includes it);
  - viewer.cpp, of a target built on the layers (public_only), includes an
    internal header of high, which it links (high's public header is fine).
Everything else in the tree is allowed and must not be reported. Its
architecture.md gets one row wrong: third uses high, not low."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
fixture = os.path.join(here, "fixture")
result = subprocess.run([sys.executable, os.path.join(here, "check_layers.py"), os.path.join(fixture, "layers.txt"),
                         os.path.join(fixture, "architecture.md")],
                        capture_output=True, text=True)
expected = [
    f'{fixture}/src/low/low.cpp:3: includes "high/high.h" of high, but low links no loupe library',
    f'{fixture}/src/low/sneaky.h:2: includes "high/detail.h" of high, but low links no loupe library',
    f'{fixture}/src/third/third.cpp:2: includes "low/internal.h" of low, but third links high',
    f'{fixture}/src/viewer_app/viewer.cpp:2: includes "high/detail.h", internal to high, but viewer is built on '
    f'the profiler and includes only public headers',
    f'{fixture}/architecture.md: third uses "low" there, but the build links high',
]
reported = [line for line in result.stdout.splitlines() if not line.startswith("5 problem(s)")]
if result.returncode != 1 or sorted(reported) != sorted(expected):
    print(f"exit {result.returncode}, expected 1\n--- reported\n" + result.stdout + "--- expected\n" + "\n".join(expected))
    sys.exit(1)
print("check_layers reports exactly the four crossings and the wrong row of the made-up tree")
