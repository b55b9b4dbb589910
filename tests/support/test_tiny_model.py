"""The tiny model the engine tests load: small, the same on every run, a llama GGUF file."""

from __future__ import annotations

from pathlib import Path

import gguf

from tests.support.tiny_model import ARCHITECTURE, EMBEDDING, LAYERS, write_tiny_model


def test_the_tiny_model_is_under_a_megabyte_and_the_same_byte_for_byte_every_time(tmp_path: Path):
    first = write_tiny_model(tmp_path / "a")
    second = write_tiny_model(tmp_path / "b")
    assert first.size_bytes < 1024 * 1024
    assert first.gguf_path.read_bytes() == second.gguf_path.read_bytes()


def test_the_tiny_model_is_a_two_layer_llama_64_wide_with_a_byte_fallback_vocabulary(tmp_path: Path):
    model = write_tiny_model(tmp_path)
    reader = gguf.GGUFReader(str(model.gguf_path))

    def scalar(key: str) -> object:
        field = reader.fields[key]
        return field.contents()

    assert scalar("general.architecture") == ARCHITECTURE
    assert scalar(f"{ARCHITECTURE}.block_count") == LAYERS
    assert scalar(f"{ARCHITECTURE}.embedding_length") == EMBEDDING
    tokens = scalar("tokenizer.ggml.tokens")
    assert isinstance(tokens, list)
    assert [f"<0x{byte:02X}>" for byte in range(256)] == tokens[3:259]
    assert len(tokens) == 264
    assert "FROM ./tiny.gguf" in model.modelfile_path.read_text()
