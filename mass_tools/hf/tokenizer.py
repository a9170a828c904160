"""The tokenizer of a ``transformers`` export: the sentencepiece model's
segmentation, the fairseq dictionary's ids.

fairseq binarizes a line as the sentencepiece pieces of the line looked up in
``dict.txt`` (``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, the symbols in
the dictionary's order, ``<mask>`` last), followed by ``</s>``. Here the
sentencepiece model is rewritten with the dictionary's symbols as its pieces,
in the dictionary's order, and handed to the converter ``transformers`` uses
for sentencepiece models, which follows the model's own normalization. Two
kinds of dictionary symbols have no piece of their own:

* characters the sentencepiece model does not know: sentencepiece emits such
  a character (a run of them) as it is and fairseq counted it as a word of
  its own; it becomes a piece that only that text can match, and a run is
  preferred whole, as sentencepiece keeps it (:data:`UNKNOWN_RUN_PENALTY`);
* fairseq's fillers (``madeupword0000``...), ``<mask>`` and the four
  specials: text never turns into them, so they get a score no segmentation
  picks (:data:`NEVER`).
"""

import copy

# sentencepiece's piece types (sentencepiece_model.proto: ModelProto.SentencePiece.Type)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED = 1, 2, 3, 4, 5
# below any real piece: a segmentation never picks these pieces for text
NEVER = -1e9
# sentencepiece scores an unknown character min(piece scores) - 10 (its kUnkPenalty):
# the same for each unknown piece, so a run of them is cheaper whole than split
UNKNOWN_RUN_PENALTY = 10.0


def load_proto(spm_model):
    """The ``ModelProto`` of a sentencepiece ``.model`` file."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    with open(spm_model, "rb") as model:
        proto.ParseFromString(model.read())
    return proto


def dictionary_proto(proto, dictionary):
    """A copy of ``proto`` whose pieces are the symbols of the fairseq
    ``dictionary``, in its order (piece i is symbol i)."""
    own = {piece.piece: piece for piece in proto.pieces if piece.type != UNKNOWN}
    unknown_score = min(p.score for p in proto.pieces if p.type == NORMAL) - UNKNOWN_RUN_PENALTY
    specials = {dictionary.bos(): CONTROL, dictionary.pad(): CONTROL,
                dictionary.eos(): CONTROL, dictionary.unk(): UNKNOWN}
    fillers = {i for i, symbol in enumerate(dictionary.symbols)
               if symbol.startswith("madeupword") or symbol == "<mask>"}
    rewritten = copy.deepcopy(proto)
    del rewritten.pieces[:]
    for i, symbol in enumerate(dictionary.symbols):
        piece = rewritten.pieces.add()
        piece.piece = symbol
        if i in specials or (i in fillers and symbol not in own):
            piece.type, piece.score = specials.get(i, UNUSED), NEVER
        elif symbol in own:
            piece.type, piece.score = own[symbol].type, own[symbol].score
        else:  # a character (run) the sentencepiece model emits as unknown
            piece.type, piece.score = NORMAL, unknown_score
    rewritten.trainer_spec.unk_id = dictionary.unk()
    rewritten.trainer_spec.vocab_size = len(dictionary)
    return rewritten


def backend_tokenizer(proto, dictionary, eos_token="</s>"):
    """The ``tokenizers.Tokenizer``: segmentation by the rewritten model, each
    line followed by ``</s>`` (as fairseq binarizes it), and decoding that
    joins pieces as fairseq-generate's ``--post-process sentencepiece`` does
    (spaces for the ``▁`` marks, stripped at both ends)."""
    from tokenizers import Regex, decoders, processors
    from transformers.convert_slow_tokenizer import SpmConverter

    rewritten = dictionary_proto(proto, dictionary)
    if rewritten.trainer_spec.model_type == 1:  # unigram: (piece, score) by id
        vocab = [(piece.piece, piece.score) for piece in rewritten.pieces]
    else:  # bpe: the converter ranks merges by piece score
        vocab = {piece.piece: i for i, piece in enumerate(rewritten.pieces)}
    tokenizer = SpmConverter.build_tokenizer_from_spm_proto(rewritten, vocab)
    if tokenizer is None:
        raise ValueError("the sentencepiece model is neither unigram nor bpe: "
                         "--spm-model must be a unigram or bpe sentencepiece model")
    eos = dictionary.index(eos_token)
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"$A {eos_token}", special_tokens=[(eos_token, eos)])
    # fairseq strips the whole line; the converter's decoder strips one space
    tokenizer.decoder = decoders.Sequence(
        [tokenizer.decoder, decoders.Replace(Regex(r"\A\s+|\s+\z"), "")])
    return tokenizer


def build_tokenizer(spm_model, dictionary, max_positions):
    """A ``transformers`` fast tokenizer with the dictionary's ids.

    ``<s>``, ``<pad>`` and ``</s>`` are its special tokens, left out when
    decoding with ``skip_special_tokens=True``; ``<unk>`` is not: fairseq
    writes it in its hypotheses, and so does this tokenizer. Inputs are
    padded on the right (the model numbers positions from the first column)."""
    from transformers import PreTrainedTokenizerFast

    backend = backend_tokenizer(load_proto(spm_model), dictionary)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=dictionary[dictionary.bos()], eos_token=dictionary[dictionary.eos()],
        pad_token=dictionary[dictionary.pad()],
        padding_side="right", truncation_side="right",
        model_max_length=max_positions, clean_up_tokenization_spaces=False,
        model_input_names=["input_ids", "attention_mask"])
