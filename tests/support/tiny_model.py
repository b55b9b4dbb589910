"""A tiny llama model with random weights, written at test time, that a real Ollama loads.

The tests need an engine that answers, not a good answer: two layers, 64 wide, a SentencePiece
vocabulary of 264 tokens (three specials, the 256 byte-fallback tokens and five word pieces), about
half a megabyte as GGUF. Weights are seeded, so the file is the same byte for byte on every run;
nothing is downloaded and no weights are committed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

ARCHITECTURE = "llama"
EMBEDDING = 64
LAYERS = 2
HEADS = 4
FEED_FORWARD = 128
CONTEXT = 512
SEED = 20261204

SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
WORD_PIECES = ("\u2581", "\u2581a", "\u2581the", "e", "t")
UNKNOWN_ID, BEGIN_ID, END_ID = 0, 1, 2

# A chat template in Ollama's Go template syntax, so /api/chat and /v1/chat/completions have a
# prompt to build.
MODELFILE_TEMPLATE = "{{- range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}assistant: "


@dataclass(frozen=True)
class TinyModel:
    """The written file and the Modelfile that `ollama create` takes."""

    gguf_path: Path
    modelfile_path: Path

    @property
    def size_bytes(self) -> int:
        return self.gguf_path.stat().st_size


def vocabulary() -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and token types of the byte-fallback SentencePiece vocabulary."""
    tokens = list(SPECIAL_TOKENS)
    types = [int(gguf.TokenType.UNKNOWN), int(gguf.TokenType.CONTROL), int(gguf.TokenType.CONTROL)]
    tokens += [f"<0x{byte:02X}>" for byte in range(256)]
    types += [int(gguf.TokenType.BYTE)] * 256
    tokens += list(WORD_PIECES)
    types += [int(gguf.TokenType.NORMAL)] * len(WORD_PIECES)
    scores = [0.0] * (len(SPECIAL_TOKENS) + 256) + [-float(rank) for rank in range(len(WORD_PIECES))]
    return tokens, scores, types


def _tensor_shapes(vocabulary_size: int) -> dict[str, tuple[int, ...]]:
    """Tensor names and numpy shapes (rows, columns) of a llama model, as llama.cpp names them."""
    shapes: dict[str, tuple[int, ...]] = {
        "token_embd.weight": (vocabulary_size, EMBEDDING),
        "output_norm.weight": (EMBEDDING,),
        "output.weight": (vocabulary_size, EMBEDDING),
    }
    for layer in range(LAYERS):
        block = f"blk.{layer}"
        shapes |= {
            f"{block}.attn_norm.weight": (EMBEDDING,),
            f"{block}.attn_q.weight": (EMBEDDING, EMBEDDING),
            f"{block}.attn_k.weight": (EMBEDDING, EMBEDDING),
            f"{block}.attn_v.weight": (EMBEDDING, EMBEDDING),
            f"{block}.attn_output.weight": (EMBEDDING, EMBEDDING),
            f"{block}.ffn_norm.weight": (EMBEDDING,),
            f"{block}.ffn_gate.weight": (FEED_FORWARD, EMBEDDING),
            f"{block}.ffn_up.weight": (FEED_FORWARD, EMBEDDING),
            f"{block}.ffn_down.weight": (EMBEDDING, FEED_FORWARD),
        }
    return shapes


def write_tiny_model(directory: Path, *, name: str = "tiny") -> TinyModel:
    """Write `<name>.gguf` and `Modelfile` into `directory` and return their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    gguf_path = directory / f"{name}.gguf"
    tokens, scores, types = vocabulary()
    writer = gguf.GGUFWriter(str(gguf_path), ARCHITECTURE)
    writer.add_name(name)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(EMBEDDING)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(EMBEDDING // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(BEGIN_ID)
    writer.add_eos_token_id(END_ID)
    writer.add_unk_token_id(UNKNOWN_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    random = np.random.default_rng(SEED)
    for tensor_name, shape in _tensor_shapes(len(tokens)).items():
        if len(shape) == 1:
            values = np.ones(shape, dtype=np.float32)
        else:
            values = random.normal(0.0, 0.02, size=shape).astype(np.float32)
        writer.add_tensor(tensor_name, values)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    modelfile_path = directory / "Modelfile"
    modelfile_path.write_text(
        f'FROM ./{gguf_path.name}\nTEMPLATE """{MODELFILE_TEMPLATE}"""\nPARAMETER num_ctx {CONTEXT}\n',
        encoding="utf-8",
    )
    return TinyModel(gguf_path=gguf_path, modelfile_path=modelfile_path)
