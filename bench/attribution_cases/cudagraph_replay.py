import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2048, 2048)

    def forward(self, x):
        y = self.fc(x)
        return torch.nn.functional.gelu(y) * 2 + x.sin()


m = torch.compile(Block().cuda(), mode="reduce-overhead")
x = torch.randn(2048, 2048, device="cuda")
with torch.no_grad():
    for _ in range(3):
        m(x)
