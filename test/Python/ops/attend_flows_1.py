# RUN: %python %s
# REQUIRES: numpy, torch
#
# Decode (the indexer, then attend over its selection) of every shipped
# flow on the CPU, part 2 of 2 (attend_flows_0.py and attend_flows_1.py
# cover examples/*.mlir): see vortex.testing.attention.check_shipped_decode.

import os

from vortex.testing import EXAMPLES
from vortex.testing.attention import check_shipped_decode

NAMES = sorted(n[:-5] for n in os.listdir(EXAMPLES) if n.endswith(".mlir"))
check_shipped_decode(NAMES[1::2])
