import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2048, 2048)

    def forward(self, x):
        y = self.fc(x.float())
        return torch.nn.functional.gelu(y) * 2 + x.sin()


m = torch.compile(M().cuda())
m(torch.randn(2048, 2048, device="cuda", dtype=torch.float16)).sum().backward()
