"""Are the two languages aligned in the encoder? Sentence retrieval on a
parallel set, before any back-translation.

Each sentence of a binarized parallel split (``SUBSET.L1-L2.L1`` / ``.L2``,
as written by ``mass-binarize --pair``) is encoded with its own
language embedding; its representation is the mean of the encoder states
over its tokens. For every L1 sentence the nearest L2 sentence by cosine
similarity is retrieved, and the other way round. Precision at 1 is the
share of sentences whose nearest neighbour is their translation; chance is
1 / N. Unsupervised back-translation bootstraps from such an alignment, so a
cross-lingual checkpoint with a precision near chance is not ready for it.
Compare with the same probe on a random-initialised model of the same size:
shared tokens (numbers, names) alone let it find some translations.

"centred" removes each language's mean representation first. A constant
offset per language (the language embedding carries one) otherwise hides a
shared structure from the cosine.

    python -m projects.crosslingual.retrieval DATA_BIN --path xl/checkpoint_best.pt \\
        --langs en,fr --subset valid
"""

import argparse
import json
import os
import sys


def encoder_parser(doc, data_help, path_help):
    """A parser with the options of a script that embeds sentences with a
    checkpoint's encoder: DATA, --path, --langs, --batch-size, --cpu."""
    parser = argparse.ArgumentParser(
        description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", help=data_help)
    parser.add_argument("--path", required=True, help=path_help)
    parser.add_argument("--langs", default="en,fr", help="L1,L2 (default: en,fr)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--cpu", action="store_true", help="do not use a GPU even if there is one")
    return parser


def check_encoder_args(parser, args):
    """--langs split into two languages and --path an existing file, or the
    parser's error naming the option."""
    langs = args.langs.split(",")
    if len(langs) != 2 or not all(langs):
        parser.error(f"--langs {args.langs!r}: give two languages, e.g. en,fr")
    args.langs = langs
    if not os.path.isfile(args.path):
        parser.error(f"--path {args.path}: no such file")


def parse_args(argv=None):
    parser = encoder_parser(__doc__, "binarized data dir with dict.txt and the parallel split",
                            "the checkpoint to probe")
    parser.add_argument("--subset", default="valid", help="parallel split (default: valid)")
    parser.add_argument("--max-sentences", type=int, default=0,
                        help="use the first N pairs only (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args(argv)
    check_encoder_args(parser, args)
    l1, l2 = args.langs
    require_binarized(parser, [os.path.join(args.data, f"{args.subset}.{l1}-{l2}.{lang}")
                               for lang in args.langs],
                      f"binarize the parallel {args.subset} set with mass-binarize "
                      f"--pair {l1}-{l2}")
    return args


def require_binarized(parser, prefixes, how):
    """Stop with a usage error unless every ``PREFIX.idx`` exists; ``how``
    says how to make a missing one."""
    for prefix in prefixes:
        if not os.path.isfile(prefix + ".idx"):
            parser.error(f"{prefix}.idx: no such file; {how}")


def sentence_vectors(model, dictionary, dataset, lang_id, batch_size):
    """Mean encoder state over the tokens (eos included) of every sentence;
    ``lang_id`` is None for a model without language embeddings."""
    import torch
    from fairseq.data import data_utils

    vectors = []
    device = next(model.parameters()).device
    for start in range(0, len(dataset), batch_size):
        items = [dataset[i] for i in range(start, min(start + batch_size, len(dataset)))]
        tokens = data_utils.collate_tokens(items, dictionary.pad(), left_pad=False).to(device)
        lengths = torch.tensor([len(t) for t in items], device=device)
        kwargs = {} if lang_id is None else {"src_lang_id": lang_id, "tgt_lang_id": lang_id}
        out = model.encoder(tokens, src_lengths=lengths, **kwargs)
        states = out["encoder_out"][0].transpose(0, 1).float()  # B x T x C
        keep = tokens.ne(dictionary.pad()).unsqueeze(-1).to(states)
        vectors.append((states * keep).sum(1) / keep.sum(1))
    return torch.cat(vectors)


def precision_at_1(queries, keys):
    import torch

    queries = torch.nn.functional.normalize(queries, dim=-1)
    keys = torch.nn.functional.normalize(keys, dim=-1)
    nearest = (queries @ keys.t()).argmax(dim=-1)
    return nearest.eq(torch.arange(len(queries), device=nearest.device)).float().mean().item()


def load_encoder(path, data, langs, cpu=False):
    """The checkpoint's model (eval mode, on the GPU unless ``cpu``), its
    dictionary, and a function giving a language's embedding id (None for a
    model without language embeddings); exits naming a missing language."""
    import torch
    from fairseq import checkpoint_utils

    import mass_plugin  # noqa: F401  (registers the plugin; safe checkpoint loading)

    models, _, task = checkpoint_utils.load_model_ensemble_and_task(
        [path], arg_overrides={"data": data})
    model = models[0].eval()
    if torch.cuda.is_available() and not cpu:
        model.cuda()
    embed_langs = getattr(model.encoder, "embed_langs", None)
    if embed_langs is not None:
        missing = [lang for lang in langs if lang not in embed_langs.langs]
        if missing:
            sys.exit(f"error: {path} has language embeddings for "
                     f"{','.join(embed_langs.langs)}, not for {','.join(missing)} (--langs)")

    def lang_id(lang):
        return None if embed_langs is None else embed_langs.langs.index(lang)

    return model, task.source_dictionary, lang_id


def main(argv=None):
    args = parse_args(argv)
    import torch
    from fairseq.data import data_utils

    model, dictionary, lang_id = load_encoder(args.path, args.data, args.langs, args.cpu)
    l1, l2 = args.langs
    vectors = {}
    with torch.no_grad():
        for lang in args.langs:
            prefix = os.path.join(args.data, f"{args.subset}.{l1}-{l2}.{lang}")
            dataset = data_utils.load_indexed_dataset(prefix, dictionary)
            if args.max_sentences:
                dataset = [dataset[i] for i in range(min(args.max_sentences, len(dataset)))]
            vectors[lang] = sentence_vectors(model, dictionary, dataset, lang_id(lang),
                                             args.batch_size)
    if len(vectors[l1]) != len(vectors[l2]):
        sys.exit(f"error: {args.subset}.{l1}-{l2} has {len(vectors[l1])} {l1} and "
                 f"{len(vectors[l2])} {l2} sentences; the split must be parallel")
    centred = {lang: v - v.mean(0, keepdim=True) for lang, v in vectors.items()}
    n = len(vectors[l1])
    result = {"sentences": n, "chance": 1.0 / n}
    for name, vecs in (("raw", vectors), ("centred", centred)):
        result[f"{l1}->{l2} {name}"] = precision_at_1(vecs[l1], vecs[l2])
        result[f"{l2}->{l1} {name}"] = precision_at_1(vecs[l2], vecs[l1])
    if args.json:
        print(json.dumps(result))
        return result
    print(f"{args.path}: retrieval precision at 1 on {n} {args.subset} pairs "
          f"(chance {1.0 / n:.4f})")
    for name in ("raw", "centred"):
        print(f"  {name:8s} {l1}->{l2} {result[f'{l1}->{l2} {name}']:.4f}   "
              f"{l2}->{l1} {result[f'{l2}->{l1} {name}']:.4f}")
    return result


if __name__ == "__main__":
    main()
