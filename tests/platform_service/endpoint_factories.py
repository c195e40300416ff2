"""What the endpoint tests serve: a tiny GPT-2 built here, and a class of the user's.

The model is a real causal language model of the ``transformers`` library (two layers of
32 dimensions, a byte-level BPE tokenizer trained on a few sentences), saved to a directory
the way a user's model is, so the real loading and generation code runs on CPU in seconds.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["Greeter", "tiny_gpt2"]

_CORPUS = [
    "Gridweave serves models on slices of GPUs.",
    "Hello, how are you today? I am fine, thank you.",
    "The quick brown fox jumps over the lazy dog.",
    "Endpoints scale to zero when idle and wake on the next request.",
]


def tiny_gpt2(directory: Path, *, n_embd: int = 32) -> Path:
    """A tiny GPT-2 and its tokenizer saved in ``directory`` (made if missing); vLLM's CPU
    build needs ``n_embd=64`` (its attention has no 16-wide heads)."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        _CORPUS * 4, vocab_size=300, min_frequency=1, special_tokens=["<|endoftext|>"]
    )
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=bpe,
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tokenizer.save_pretrained(directory)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=256,
        n_embd=n_embd,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(directory)
    return directory


class Greeter:
    """A user's class served as a custom endpoint: its public methods are its routes."""

    def __init__(self) -> None:
        self.greeting = "hello"

    def greet(self, name: str) -> str:
        return f"{self.greeting}, {name}"

    def add(self, a: int, b: int) -> int:
        return a + b
