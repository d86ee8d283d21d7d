"""The synthetic suite and table generators live with the tests (tests/helpers); benchmarks reuse them."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "helpers"))
