"""Mine pseudo-parallel sentence pairs from two monolingual corpora with a
model's encoder: no parallel text is used.

Each sentence of the binarized monolingual splits ``SUBSET.L1`` and
``SUBSET.L2`` is encoded as in ``crosslingual_retrieval.py`` (mean encoder state,
each language's mean removed). A candidate pair (x, y) is scored by the
ratio margin of Artetxe and Schwenk (2019): cos(x, y) divided by the mean of
the average similarity of x to its k nearest L2 sentences and of y to its k
nearest L1 sentences. Pairs where each side is the other's best match are
kept, best first, down to ``--min-margin`` or ``--max-pairs``.

Outputs ``OUT.L1`` / ``OUT.L2`` (the pairs, one per line, as the subword
tokens of the dictionary) and ``OUT.tsv`` (margin and the two line numbers),
ready for ``mass-binarize --pair L1-L2 --train OUT``.

    python -m projects.crosslingual.mine_pairs DATA_BIN --path dae/checkpoint_best.pt \\
        --langs en,fr --out mined/train --min-margin 1.05
"""

import os
import sys

from projects.crosslingual.retrieval import (
    check_encoder_args,
    encoder_parser,
    load_encoder,
    require_binarized,
    sentence_vectors,
)


def parse_args(argv=None):
    parser = encoder_parser(__doc__, "binarized data dir with dict.txt and SUBSET.L1, SUBSET.L2",
                            "the checkpoint whose encoder embeds")
    parser.add_argument("--subset", default="train", help="monolingual split (default: train)")
    parser.add_argument("--out", required=True, help="output prefix: OUT.L1, OUT.L2, OUT.tsv")
    parser.add_argument("--k", type=int, default=4, help="neighbours in the margin (default: 4)")
    parser.add_argument("--min-margin", type=float, default=1.0,
                        help="keep pairs with at least this margin (default: 1.0)")
    parser.add_argument("--max-pairs", type=int, default=0,
                        help="keep at most the N best pairs (default: no limit)")
    args = parser.parse_args(argv)
    check_encoder_args(parser, args)
    if args.langs[0] == args.langs[1]:
        parser.error(f"--langs {','.join(args.langs)!r}: give two different languages")
    if args.k < 1:
        parser.error("--k must be at least 1")
    require_binarized(parser, [os.path.join(args.data, f"{args.subset}.{lang}")
                               for lang in args.langs],
                      "binarize the monolingual text with mass-binarize --mono-train")
    return args


def knn_mean(queries, keys, k, chunk=2048):
    """Average cosine of each query to its k nearest keys (unit vectors)."""
    import torch

    k = min(k, len(keys))
    return torch.cat([(queries[s:s + chunk] @ keys.t()).topk(k, dim=-1).values.mean(-1)
                      for s in range(0, len(queries), chunk)])


def best_by_margin(queries, keys, query_knn, key_knn, chunk=2048):
    """For each query, the key with the highest ratio margin, and that margin."""
    import torch

    scores, index = [], []
    for s in range(0, len(queries), chunk):
        cos = queries[s:s + chunk] @ keys.t()
        margin = cos / ((query_knn[s:s + chunk, None] + key_knn[None, :]) / 2)
        value, best = margin.max(dim=-1)
        scores.append(value)
        index.append(best)
    return torch.cat(scores), torch.cat(index)


def mine(vectors1, vectors2, k):
    """Mutual best pairs by ratio margin: a list of (margin, i, j), best first.
    The vectors are centred per language and normalised here."""
    import torch

    unit = [torch.nn.functional.normalize(v - v.mean(0, keepdim=True), dim=-1)
            for v in (vectors1, vectors2)]
    knn1, knn2 = knn_mean(unit[0], unit[1], k), knn_mean(unit[1], unit[0], k)
    score, forward = best_by_margin(unit[0], unit[1], knn1, knn2)
    _, backward = best_by_margin(unit[1], unit[0], knn2, knn1)
    mutual = backward[forward].eq(torch.arange(len(forward), device=forward.device))
    pairs = [(score[i].item(), i, forward[i].item())
             for i in mutual.nonzero().flatten().tolist()]
    return sorted(pairs, key=lambda pair: -pair[0])


def main(argv=None):
    args = parse_args(argv)
    import torch
    from fairseq.data import data_utils

    model, dictionary, lang_id = load_encoder(args.path, args.data, args.langs, args.cpu)
    datasets, vectors = {}, {}
    with torch.no_grad():
        for lang in args.langs:
            datasets[lang] = data_utils.load_indexed_dataset(
                os.path.join(args.data, f"{args.subset}.{lang}"), dictionary)
            vectors[lang] = sentence_vectors(model, dictionary, datasets[lang], lang_id(lang),
                                             args.batch_size)
            print(f"| encoded {len(datasets[lang])} {lang} sentences", file=sys.stderr)
    l1, l2 = args.langs
    pairs = [p for p in mine(vectors[l1], vectors[l2], args.k) if p[0] >= args.min_margin]
    if args.max_pairs:
        pairs = pairs[:args.max_pairs]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(f"{args.out}.{l1}", "w") as out1, open(f"{args.out}.{l2}", "w") as out2, \
            open(f"{args.out}.tsv", "w") as table:
        table.write(f"margin\t{l1}_line\t{l2}_line\n")
        for margin, i, j in pairs:
            out1.write(dictionary.string(datasets[l1][i][:-1]) + "\n")
            out2.write(dictionary.string(datasets[l2][j][:-1]) + "\n")
            table.write(f"{margin:.4f}\t{i + 1}\t{j + 1}\n")
    print(f"| {len(pairs)} pairs with margin >= {args.min_margin} -> {args.out}.{{{l1},{l2},tsv}}",
          file=sys.stderr)
    return pairs


if __name__ == "__main__":
    main()
