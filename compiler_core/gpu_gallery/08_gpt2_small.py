"""GPT-2 from Hugging Face transformers (inference)

A small GPT-2 built from its config with random weights (4 layers, 256 wide, no download), batch 4 of 256 tokens: attention goes through scaled_dot_product_attention, the layer norms, GELUs and residual adds fuse into Triton kernels. Needs transformers.
"""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

device = "cuda" if torch.cuda.is_available() else "cpu"
batch, tokens = (4, 256) if device == "cuda" else (1, 16)

torch.manual_seed(0)
config = GPT2Config(n_layer=4, n_embd=256, n_head=4, n_positions=512, vocab_size=8192)
model = GPT2LMHeadModel(config).to(device).eval()
ids = torch.randint(0, config.vocab_size, (batch, tokens), device=device)
with torch.no_grad():
    logits = torch.compile(model)(ids).logits
print("logits:", tuple(logits.shape))
