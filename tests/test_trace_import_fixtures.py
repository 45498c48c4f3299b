"""Session fixtures of the trace import tests (a pytest plugin: `pytest_plugins` names it).

`encoder_log`: a TORCH_TRACE log of real compiles (issue 46), made once per session: a 2-layer
encoder, forward and backward, compiled three times (a global it branches on takes a new value:
Dynamo guards on it), the recompiles answered by Inductor's FX graph and AOTAutograd caches (which
log their provenance artifacts empty, so the two print the same graphs), then a small function.
Made in a fresh cache folder, so the first compile is made in full (about 2 MB of log).
"""

from __future__ import annotations

import pytest

from plain_trace import traced_folder

ENCODER = """
import torch, torch.nn as nn
VERSION = 0
class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm, self.attn = nn.LayerNorm(d), nn.Linear(d, 3 * d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
    def forward(self, x):
        q, k, v = self.attn(self.norm(x)).chunk(3, dim=-1)
        x = x + torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return x + self.mlp(x)
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(8), Block(8))
    def forward(self, x):
        if VERSION < 0:
            x = -x
        return self.blocks(x).mean()
model = torch.compile(Encoder())
for VERSION in range(3):
    model(torch.randn(2, 4, 8)).backward()
torch.compile(lambda x: torch.sin(x) * 2)(torch.randn(4))
"""


@pytest.fixture(scope="session")
def encoder_log(tmp_path_factory):
    """The log file's Path."""
    folder = tmp_path_factory.mktemp("encoder")
    script = folder / "encoder.py"
    script.write_text(ENCODER)
    _, trace = traced_folder([str(script)], folder, timeout=600,
                             inductor_cache=folder / "inductor")  # the recompiles' cache hits
    (log,) = trace.glob("*.log")
    return log
