"""The embedder loads its model only when something is embedded, so commands that only list collections, share
them or ask the model alone start without torch and sentence-transformers."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from models.embeddings import SentenceEmbeddings, _pooled_dimension, bundled_embedder_path
from models.errors import ModelError
from tests.conftest import REPO


def test_the_dimension_is_read_without_loading_and_is_the_loaded_models():
    embeddings = SentenceEmbeddings()
    assert embeddings.dimension == 384 and embeddings._model is None
    vector = embeddings.embed_query("Who directed Jaws?")
    assert embeddings._model is not None
    assert len(vector) == embeddings.dimension == embeddings.model.get_embedding_dimension()


def test_a_dense_layer_or_a_folder_that_does_not_say_makes_the_dimension_come_from_the_model(tmp_path):
    source = bundled_embedder_path()
    (tmp_path / "1_Pooling").mkdir()
    shutil.copy(source / "1_Pooling" / "config.json", tmp_path / "1_Pooling" / "config.json")
    assert _pooled_dimension(tmp_path) is None  # no modules.json
    modules = json.loads((source / "modules.json").read_text())
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    assert _pooled_dimension(tmp_path) == 384
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}
    (tmp_path / "modules.json").write_text(json.dumps(modules + [dense]))
    assert _pooled_dimension(tmp_path) is None


def test_a_folder_without_weights_fails_on_first_use_with_a_clear_error(tmp_path):
    source = bundled_embedder_path()
    (tmp_path / "1_Pooling").mkdir()
    shutil.copy(source / "modules.json", tmp_path / "modules.json")
    shutil.copy(source / "1_Pooling" / "config.json", tmp_path / "1_Pooling" / "config.json")
    embeddings = SentenceEmbeddings(tmp_path)
    with pytest.raises(ModelError, match="could not be loaded.*Fix:"):
        embeddings.embed_query("anything")


def test_listing_collections_imports_neither_torch_nor_scikit_learn(demo_data_dir, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(demo_data_dir, data)
    script = ("import sys\nfrom pipeline.__main__ import main\n"
              f"code = main(['collections', '--data-dir', {str(data)!r}])\n"
              "heavy = sorted({'torch', 'sentence_transformers', 'sklearn'} & set(sys.modules))\n"
              "print('HEAVY', heavy)\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "demo:" in done.stdout and "HEAVY []" in done.stdout
