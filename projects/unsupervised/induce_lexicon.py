#!/usr/bin/env python3
"""A bilingual word lexicon from two monolingual corpora, with no parallel text.

    python -m projects.unsupervised.induce_lexicon --src en.txt --src-lang en \\
        --tgt fr.txt --tgt-lang fr --output lexicon.en-fr.tsv

1. Each corpus is tokenised (Moses, lower-cased) and gets its own skip-gram
   word vectors (gensim's Word2Vec).
2. The vectors of the ``--max-vocab`` most frequent words of each language
   are normalised (unit length, centred, unit length: Artetxe et al., 2018).
3. The words spelt the same in both languages (names, commands, numbers with
   letters, shared vocabulary) are the seed dictionary (identical strings,
   as in Smith et al., 2017).
4. An orthogonal map from source to target vectors is fitted to the
   dictionary (Procrustes), and the dictionary is rebuilt from the word pairs
   that are each other's nearest neighbour under the map, by CSLS (Conneau
   et al., 2018, "Word translation without parallel data"); ``--iterations``
   times.
5. Steps 1-4 are made ``--restarts`` times with other seeds of the vectors
   (the lexicons they give differ much); the one kept has the highest mean
   CSLS score over its first ``--select-words`` pairs, a criterion that
   needs no parallel text (in the spirit of Conneau et al.'s model
   selection).

The output has one line per pair of the last dictionary,
``source<TAB>target<TAB>CSLS score``, most frequent source words first. The
pairs are mutual nearest neighbours, so the same file translates both ways
(``translate_words.py --reverse``).

Mutual neighbours are one to one: of the articles "le", "la" and "les" only
one can pair with "the", and the others stay untranslated. ``--one-way
PREFIX`` also writes, under the last map, each word's nearest neighbour by
CSLS in the other language, as word-translation benchmarks retrieve it
(Conneau et al., 2018): ``PREFIX.SRC-TGT.tsv`` for each source word and
``PREFIX.TGT-SRC.tsv`` for each target word, the word translated from in
the first column (``translate_words.py`` without ``--reverse``), most
frequent first. Each holds the mutual pairs.

``--candidates K`` (with ``--one-way``) also writes each of those words' K
nearest neighbours by CSLS, best first, one line each, as
``PREFIX.SRC-TGT.candidates.tsv`` and ``PREFIX.TGT-SRC.candidates.tsv``:
the nearest always, the others only where they have the word among their
own K nearest too. translate_words.py ``--sample`` draws from them to make
round trips that meet the lexicon's mistakes (``the`` -> ``le`` ->
``a``), which its nearest neighbours alone never make.
"""

import argparse
import logging
import re
import zlib

import numpy as np
from sacremoses import MosesPunctNormalizer, MosesTokenizer

from mass_tools.textio import AtomicWriter, InputError, read_lines, run_main

HAS_LETTER = re.compile(r"[^\W\d_]")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--src", required=True, help="source-language text, one line each")
    parser.add_argument("--tgt", required=True, help="target-language text, one line each")
    parser.add_argument("--src-lang", required=True, help="source language code (Moses)")
    parser.add_argument("--tgt-lang", required=True, help="target language code (Moses)")
    parser.add_argument("--output", default="-", help="the lexicon (default: stdout)")
    parser.add_argument("--dim", type=int, default=100, help="word vector size")
    parser.add_argument("--window", type=int, default=5, help="skip-gram context window")
    parser.add_argument("--min-count", type=int, default=3,
                        help="words rarer than this get no vector")
    parser.add_argument("--epochs", type=int, default=10, help="Word2Vec passes")
    parser.add_argument("--max-vocab", type=int, default=20000,
                        help="most frequent words of each language that are mapped")
    parser.add_argument("--csls-vocab", type=int, default=15000,
                        help="most frequent words among which translations are sought")
    parser.add_argument("--csls-k", type=int, default=10, help="neighbourhood size of CSLS")
    parser.add_argument("--iterations", type=int, default=5,
                        help="rounds of Procrustes and dictionary rebuilding")
    parser.add_argument("--seed", type=int, default=1,
                        help="seed of the word vectors of the first restart")
    parser.add_argument("--restarts", type=int, default=3,
                        help="lexicons made with the seeds --seed, --seed + 1, ...; the one "
                             "whose first --select-words pairs (most frequent source words "
                             "first) have the highest mean CSLS score is kept (no parallel "
                             "text needed)")
    parser.add_argument("--select-words", type=int, default=1000,
                        help="how many pairs of each lexicon --restarts compares")
    parser.add_argument("--threads", type=int, default=1, help="Word2Vec worker threads")
    parser.add_argument("--one-way", metavar="PREFIX",
                        help="also write each word's nearest neighbour in the other language, "
                             "one file per direction: PREFIX.SRC-TGT.tsv and PREFIX.TGT-SRC.tsv")
    parser.add_argument("--candidates", type=int, default=0, metavar="K",
                        help="with --one-way, also write each word's K nearest neighbours "
                             "that have it among their K nearest too, best first: "
                             "PREFIX.SRC-TGT.candidates.tsv (for translate_words.py --sample)")
    return parser.parse_args(argv)


def tokenized(path, lang):
    """The lower-cased Moses tokens of each non-empty line of ``path``, as
    translate_words.py sees them: tokenized first (Moses splits the full stop
    of "file. Then" by the capital that follows it), then lower-cased."""
    normalizer, tokenizer = MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)
    sentences = []
    for line in read_lines(path):
        line = normalizer.normalize(line).strip()
        if line:
            sentences.append([token.lower() for token in tokenizer.tokenize(line, escape=False)])
    return sentences


def stable_hash(text):
    """Word2Vec seeds each word's initial vector with this hash of it; Python's
    own hash() of a string changes from one process to the next."""
    return zlib.crc32(text.encode("utf-8"))


def word_vectors(sentences, path, seed, args):
    """The words of the tokenized ``sentences`` of ``path`` (most frequent
    first, at most --max-vocab) and their normalised skip-gram vectors
    (words x dim, float32)."""
    from gensim.models import Word2Vec

    model = Word2Vec(sentences, vector_size=args.dim, window=args.window,
                     min_count=args.min_count, sg=1, negative=10, epochs=args.epochs,
                     workers=args.threads, seed=seed, hashfxn=stable_hash)
    words = model.wv.index_to_key[:args.max_vocab]
    if len(words) < 2 * args.csls_k:
        raise InputError(f"{path}: only {len(words)} words occur --min-count "
                         f"{args.min_count} times or more; give more text or lower it")
    return words, normalize(np.stack([model.wv[w] for w in words]).astype(np.float32))


def normalize(vectors):
    """Unit length, mean-centred, unit length again (rows are words)."""
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors - vectors.mean(axis=0)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def identical_pairs(src_words, tgt_words):
    """(source index, target index) of the words both languages spell alike,
    leaving out single characters and bare numbers."""
    tgt_index = {w: j for j, w in enumerate(tgt_words)}
    return [(i, tgt_index[w]) for i, w in enumerate(src_words)
            if w in tgt_index and len(w) > 1 and not w.isdigit()]


def procrustes(x, y, pairs):
    """The orthogonal W minimising ||x[i] W^T - y[j]|| over the pairs (i, j)."""
    a, b = x[[i for i, _ in pairs]], y[[j for _, j in pairs]]
    u, _, vt = np.linalg.svd(b.T @ a)  # dim x dim
    return u @ vt


def csls(mapped, y, k):
    """Cross-domain similarity local scaling: 2 cos(x, y) minus the mean
    cosine of x to its k nearest targets and of y to its k nearest sources
    (source words x target words)."""
    cos = mapped @ y.T
    # mean similarity to the k nearest neighbours, per source row and target column
    r_src = -np.partition(-cos, k - 1, axis=1)[:, :k].mean(axis=1)
    r_tgt = -np.partition(-cos, k - 1, axis=0)[:k, :].mean(axis=0)
    return 2 * cos - r_src[:, None] - r_tgt[None, :]


def mutual_neighbours(scores):
    """(i, j, score) for each source i and target j that are each other's best."""
    best_tgt, best_src = scores.argmax(axis=1), scores.argmax(axis=0)
    return [(i, int(j), float(scores[i, j])) for i, j in enumerate(best_tgt)
            if best_src[j] == i]


def nearest_neighbours(scores):
    """(i, j, score) for each source i and its best target j, and (j, i,
    score) for each target j and its best source i."""
    best_tgt, best_src = scores.argmax(axis=1), scores.argmax(axis=0)
    return ([(i, int(j), float(scores[i, j])) for i, j in enumerate(best_tgt)],
            [(j, int(i), float(scores[i, j])) for j, i in enumerate(best_src)])


def candidates(scores, k):
    """(i, j, score) for each source i and each of its k best targets j (best
    first) that has i among its own k best sources; the best target always;
    then the same for each target j and its sources, as (j, i, score)."""
    best_tgt = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    best_src = np.argsort(-scores, axis=0, kind="stable")[:k, :].T
    forward = [(i, int(j), float(scores[i, j])) for i, row in enumerate(best_tgt)
               for rank, j in enumerate(row) if rank == 0 or i in best_src[j]]
    backward = [(j, int(i), float(scores[i, j])) for j, column in enumerate(best_src)
                for rank, i in enumerate(column) if rank == 0 or j in best_tgt[i]]
    return forward, backward


def induce(x, y, seed_pairs, args, log):
    """Refine the seed dictionary; the last one, as (i, j, CSLS score), and
    the CSLS scores of the last map (source words x target words)."""
    pairs = [(i, j, None) for i, j in seed_pairs]
    n = args.csls_vocab
    for iteration in range(1, args.iterations + 1):
        w = procrustes(x, y, [(i, j) for i, j, _ in pairs])
        scores = csls(x[:n] @ w.T, y[:n], args.csls_k)
        pairs = mutual_neighbours(scores)
        log.info("iteration %d: %d mutual nearest neighbours", iteration, len(pairs))
    return pairs, scores


def word_pairs(pairs, from_words, to_words, any_target=False):
    """(from word, to word, score) of index ``pairs``, in index order (pairs
    of one word in the order given); punctuation and numbers are left out
    (translate_words.py copies them), as targets too unless ``any_target``."""
    return [(from_words[i], to_words[j], score)
            for i, j, score in sorted(pairs, key=lambda pair: pair[0])
            if HAS_LETTER.search(from_words[i])
            and (any_target or HAS_LETTER.search(to_words[j]))]


def lexicon(src, tgt, seed, args, log):
    """One restart: vectors with ``seed``, then the induced pairs, as
    (source word, target word, score), and the selection score."""
    src_words, x = word_vectors(src, args.src, seed, args)
    tgt_words, y = word_vectors(tgt, args.tgt, seed, args)
    seed_pairs = identical_pairs(src_words, tgt_words)
    log.info("seed %d: %d %s and %d %s words; %d spelt alike (the seed dictionary)", seed,
             len(src_words), args.src_lang, len(tgt_words), args.tgt_lang, len(seed_pairs))
    if len(seed_pairs) < args.dim:
        raise InputError(f"only {len(seed_pairs)} words are spelt alike in {args.src} and "
                         f"{args.tgt}, too few to fit a {args.dim}-dimensional map; "
                         "give more text or lower --dim")
    pairs, scores = induce(x, y, seed_pairs, args, log)
    pairs = word_pairs(pairs, src_words, tgt_words)
    frequent = [score for _, _, score in pairs[:args.select_words]]
    selection = sum(frequent) / max(1, len(frequent))
    log.info("seed %d: %d pairs, mean CSLS score of the first %d: %.4f",
             seed, len(pairs), len(frequent), selection)
    forward, backward = nearest_neighbours(scores) if args.one_way else ([], [])
    there, back = f"{args.src_lang}-{args.tgt_lang}", f"{args.tgt_lang}-{args.src_lang}"
    one_way = {there: word_pairs(forward, src_words, tgt_words),
               back: word_pairs(backward, tgt_words, src_words)}
    if args.one_way and args.candidates:
        forward, backward = candidates(scores, args.candidates)
        # the words of the one-way lexicons, each with its candidates of any kind
        for direction, nearest, from_words, to_words in (
                (there, forward, src_words, tgt_words), (back, backward, tgt_words, src_words)):
            known = {word for word, _, _ in one_way[direction]}
            one_way[f"{direction}.candidates"] = [
                row for row in word_pairs(nearest, from_words, to_words, any_target=True)
                if row[0] in known]
    return pairs, selection, one_way


def write_pairs(path, pairs):
    with AtomicWriter(path) as out:
        for source, target, score in pairs:
            out.write(f"{source}\t{target}\t{score:.4f}\n")


def check_one_way(args):
    """--one-way's files need two language codes and must not be --output."""
    if args.src_lang == args.tgt_lang:
        raise InputError(f"--one-way names its files by language: give --src-lang and "
                         f"--tgt-lang different codes (both are {args.src_lang!r})")
    for a, b in ((args.src_lang, args.tgt_lang), (args.tgt_lang, args.src_lang)):
        if args.output == f"{args.one_way}.{a}-{b}.tsv":
            raise InputError(f"--output {args.output} is also a file of --one-way "
                             f"{args.one_way}: give either another name")


def main(argv=None):
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("gensim").setLevel(logging.WARNING)  # one line per second otherwise
    log = logging.getLogger(__name__)
    args = parse_args(argv)
    if args.csls_vocab > args.max_vocab:
        raise InputError(f"--csls-vocab {args.csls_vocab} exceeds --max-vocab {args.max_vocab}")
    if args.restarts < 1:
        raise InputError(f"--restarts {args.restarts}: give 1 or more")
    if args.candidates < 0 or (args.candidates and not args.one_way):
        raise InputError(f"--candidates {args.candidates}: give a positive number of "
                         "candidates, with --one-way PREFIX to name their files")
    if args.one_way:
        check_one_way(args)
    src, tgt = tokenized(args.src, args.src_lang), tokenized(args.tgt, args.tgt_lang)
    log.info("%s: %d lines, %s: %d lines; %d-dimensional skip-gram vectors, %d epochs",
             args.src, len(src), args.tgt, len(tgt), args.dim, args.epochs)
    results = [lexicon(src, tgt, args.seed + r, args, log) for r in range(args.restarts)]
    best = max(range(args.restarts), key=lambda r: results[r][1])
    pairs, _, one_way = results[best]
    if args.restarts > 1:
        log.info("kept seed %d (the highest mean CSLS score)", args.seed + best)
    write_pairs(args.output, pairs)
    log.info("%d word pairs written to %s", len(pairs), args.output)
    if args.one_way:
        for direction, nearest in one_way.items():
            write_pairs(f"{args.one_way}.{direction}.tsv", nearest)
            log.info("%s: %d words and their %s written to %s.%s.tsv", direction,
                     len({word for word, _, _ in nearest}),
                     "candidates" if direction.endswith("candidates") else "nearest neighbours",
                     args.one_way, direction)


if __name__ == "__main__":
    run_main(main)
