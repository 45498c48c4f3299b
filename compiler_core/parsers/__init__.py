"""Parsers of the text PyTorch prints (FX code, generated modules, kernel sources): pure and
shared by the features, the result builder and the presentation, as Compiler Explorer keeps its
parsers apart from its compilers."""
