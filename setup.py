import runpy
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
# mass-tokenize, mass-binarize, ...: the tools of mass_tools as console commands
COMMANDS = runpy.run_path(str(HERE / "mass_tools" / "commands.py"))["entry_points"]()
# --transformers: tested with transformers 5.25.0, whose sentencepiece converter
# and beam search the tests compare with fairseq; protobuf reads the .model file
HF = ["transformers>=5.25", "tokenizers", "safetensors", "protobuf"]

setup(
    name="mass-plugin",
    version="0.1.0",
    description=(
        "MASS (Masked Sequence to Sequence pre-training) as a fairseq plugin, and its tools: "
        "--user-dir mass_plugin --task masked_s2s --arch transformer_mass"
    ),
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="MIT",
    # the plugin and its tools; the projects (projects/) and recipes (examples/)
    # run from a checkout
    packages=find_packages(include=["mass_plugin", "mass_plugin.*", "mass_tools", "mass_tools.*"]),
    entry_points={"console_scripts": COMMANDS},
    # the fairseq-hydra-train presets: --config-dir "$(python -m mass_plugin)/config"
    package_data={"mass_plugin": ["config/*.yaml"], "mass_tools.shell": ["*.sh"]},
    python_requires=">=3.10",
    install_requires=[
        # The official fairseq 0.12.2 does not import on Python 3.11 (dataclass
        # defaults), and on 3.10 current pip (>= 24.1) cannot install it: it
        # needs omegaconf < 2.1, whose releases have metadata pip now rejects.
        # fairseq-fixed is the same 0.12 code base patched for both; it
        # provides the `fairseq` module and the fairseq-* commands.
        # PyPI has a prebuilt wheel of it for CPython 3.12 only; on 3.10, 3.11 and
        # 3.13 pip builds it from source (a C++ compiler and the Python
        # headers, a few minutes).
        "fairseq-fixed==0.12.3.1",
        # numpy 2 removed np.compat, which fairseq 0.12 still calls in two
        # places: importing the plugin gives those two modules a numpy that has
        # it (a row of mass_plugin/patches.py), so numpy is not pinned
        "numpy",
        # weights-only checkpoint loading with an allow-list needs torch >= 2.6
        "torch>=2.6",
        "sacrebleu>=2.0",
        "sentencepiece",
        "subword-nmt",
        "sacremoses",
        "rouge-score",
    ],
    extras_require={
        # python -m projects.paper_analysis draws its plot with matplotlib
        "analysis": ["matplotlib"],
        # python -m mass_tools.export --ctranslate2 and mass_tools/translate_ct2.py;
        # --transformers too (HF below), so that requirements.txt's CI install has it
        "serve": ["ctranslate2>=4", *HF],
        # python -m mass_tools.export --transformers and mass_tools.hf.generation
        "hf": HF,
        # projects/unsupervised/induce_lexicon.py: skip-gram word vectors (Word2Vec)
        "unsup": ["gensim>=4.3"],
        # fairseq-train --tensorboard-logdir (common.tensorboard_logdir): fairseq
        # writes through torch.utils.tensorboard, which needs this package
        "tensorboard": ["tensorboard"],
        # iopath: fairseq resolves remote checkpoint paths through it; the
        # safety tests register a handler to load from a remote-style path;
        # tensorboard: the tests read the event files fairseq writes
        "test": ["pytest", "pytest-xdist", "ruff", "matplotlib", "iopath", "tensorboard"],
    },
    classifiers=[
        "Programming Language :: Python :: 3.10",
        "Programming Language :: Python :: 3.11",
        "Programming Language :: Python :: 3.12",
        "Programming Language :: Python :: 3.13",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
