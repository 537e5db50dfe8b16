# RUN: %python %s
# REQUIRES: numpy, torch
#
# Decode (the indexer, then attend over its selection) of every shipped
# flow on the CPU, part 2 of 2 (attend_flows_0.py and attend_flows_1.py
# cover examples/*.mlir): see Inputs/attend_cases.py check_shipped_decode.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "Inputs"))
from attend_cases import check_shipped_decode  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
NAMES = sorted(n[:-5] for n in os.listdir(EXAMPLES) if n.endswith(".mlir"))
check_shipped_decode(NAMES[1::2])
