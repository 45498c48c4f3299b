"""JIT vs AOT: torch.compile beside an AOTInductor package

torch.compile compiles just in time, at the first call and inside Python; AOTInductor compiles an exported program ahead of time into a package of C++ and a shared library, which loads and runs with no compile at start-up and no Python in the call.
"""
import torch

torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(16, 32)
        self.down = torch.nn.Linear(32, 16)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


model = MLP().eval()
x = torch.randn(4, 16)

# JIT: the first call traces the module, compiles it (a Python wrapper around C++ kernels) and runs.
jit = torch.compile(model)
with torch.no_grad():
    expected = jit(x)

# AOT: export the whole program, then build it into a .pt2 package: the C++ wrapper and the
# kernels Inductor generated, compiled into a shared library.
program = torch.export.export(model, (x,))
package = torch._inductor.aoti_compile_and_package(program)

# Deployment: load the package and call it; nothing is traced or compiled any more (a C++
# program can load the same package with no Python at all).
aot = torch._inductor.aoti_load_package(package)
print("same output:", torch.allclose(aot(x), expected, atol=1e-5))
