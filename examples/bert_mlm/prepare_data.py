#!/usr/bin/env python3
"""Masked-language-model data from WordNet's glosses, for `onyx train`.

Reads the glosses (definitions and usage examples) of every synset in
Debian's wordnet-base (/usr/share/wordnet/data.{noun,verb,adj,adv}), holds
out 5% of the synsets as a validation split never seen in training, trains a
BPE tokenizer on the training text only, packs the glosses into sequences
and masks 15% of each sequence's tokens (80% [MASK], 10% a random token, 10%
kept), all from one seed, so every run and every reference (PyTorch) sees
the same batches.

The tokenizer is SentencePiece (Debian: python3-sentencepiece) in BPE mode:
a maintained, fast and deterministic trainer, so the project carries no
tokenizer code of its own; the runtime never depends on it.

Writes OUT/{train,valid}/{input_ids,attention_mask,labels}.npy (int64,
[sequences, seq_len]; labels are -100 where no token is masked, the
ignore_index of the loss), OUT/tokenizer.model and OUT/data.json.
"""
import argparse
import json
import os
import random
import sys
import tempfile

import numpy as np

WORDNET = "/usr/share/wordnet"
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
IGNORE = -100


def read_glosses(wordnet_dir):
    """One document per synset: 'lemma, lemma: gloss'."""
    docs = []
    for part in ("noun", "verb", "adj", "adv"):
        path = os.path.join(wordnet_dir, "data." + part)
        if not os.path.exists(path):
            sys.exit(f"prepare_data: {path} is missing (apt-get install wordnet-base)")
        with open(path, encoding="latin-1") as f:
            for line in f:
                if line.startswith("  "):  # the licence header
                    continue
                head, sep, gloss = line.partition(" | ")
                if not sep:
                    continue
                fields = head.split()
                words = [fields[4 + 2 * i].replace("_", " ") for i in range(min(int(fields[3], 16), 3))]
                docs.append(", ".join(words) + ": " + gloss.strip())
    return docs


def train_tokenizer(texts, vocab_size, prefix):
    import sentencepiece as spm

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(texts))
        corpus = f.name
    try:
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix=prefix, vocab_size=vocab_size, model_type="bpe",
            character_coverage=1.0, normalization_rule_name="nmt_nfkc_cf",  # case-folded
            pad_id=PAD, unk_id=UNK, bos_id=CLS, eos_id=SEP, user_defined_symbols=["[MASK]"],
            pad_piece="[PAD]", unk_piece="[UNK]", bos_piece="[CLS]", eos_piece="[SEP]",
            num_threads=1, minloglevel=2)
    finally:
        os.unlink(corpus)
    return spm.SentencePieceProcessor(model_file=prefix + ".model")


def pack(token_docs, seq_len, rng):
    """[CLS] doc [SEP] doc [SEP] ... up to seq_len, padded; one in ten
    sequences stops at a random shorter length, so padding (and the attention
    mask) is exercised as in real batches."""
    sequences, current = [], [CLS]
    target = seq_len
    for doc in token_docs:
        doc = doc[: seq_len - 2]
        if len(current) + len(doc) + 1 > target and len(current) > 1:
            sequences.append(current)
            current = [CLS]
            target = seq_len if rng.random() > 0.1 else rng.randint(16, seq_len)
        current += doc + [SEP]
    if len(current) > 1:
        sequences.append(current)
    ids = np.full((len(sequences), seq_len), PAD, dtype=np.int64)
    for i, s in enumerate(sequences):
        ids[i, : len(s)] = s[:seq_len]
    return ids


def mask_tokens(ids, vocab_size, rng):
    """BERT's masking: 15% of the real tokens; of those 80% [MASK], 10% a
    random token, 10% unchanged. Labels hold the original token there."""
    inputs, labels = ids.copy(), np.full_like(ids, IGNORE)
    for row in range(ids.shape[0]):
        candidates = np.nonzero(ids[row] > MASK)[0]
        if len(candidates) == 0:
            continue
        count = max(1, int(round(0.15 * len(candidates))))
        chosen = rng.choice(candidates, size=count, replace=False)
        labels[row, chosen] = ids[row, chosen]
        roll = rng.random_sample(count)
        inputs[row, chosen[roll < 0.8]] = MASK
        randomised = chosen[(roll >= 0.8) & (roll < 0.9)]
        inputs[row, randomised] = rng.randint(MASK + 1, vocab_size, size=len(randomised))
    return inputs, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--wordnet", default=WORDNET)
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N synsets (tests)")
    args = parser.parse_args()

    docs = read_glosses(args.wordnet)
    if args.limit:
        docs = docs[: args.limit]
    rng = random.Random(args.seed)
    rng.shuffle(docs)
    held_out = max(1, len(docs) // 20)
    splits = {"valid": docs[:held_out], "train": docs[held_out:]}
    os.makedirs(args.out, exist_ok=True)
    sp = train_tokenizer(splits["train"], args.vocab_size, os.path.join(args.out, "tokenizer"))
    vocab = sp.get_piece_size()
    masking = np.random.RandomState(args.seed)
    summary = {"vocab_size": vocab, "seq_len": args.seq_len, "seed": args.seed, "pad_id": PAD, "mask_id": MASK,
               "ignore_index": IGNORE, "source": args.wordnet, "tokenizer": "sentencepiece bpe"}
    for name in ("train", "valid"):
        ids = pack(sp.encode(splits[name]), args.seq_len, rng)
        inputs, labels = mask_tokens(ids, vocab, masking)
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "input_ids.npy"), inputs)
        np.save(os.path.join(folder, "attention_mask.npy"), (ids != PAD).astype(np.int64))
        np.save(os.path.join(folder, "labels.npy"), labels)
        summary[name] = {"synsets": len(splits[name]), "sequences": int(ids.shape[0]),
                         "tokens": int((ids != PAD).sum()), "masked": int((labels != IGNORE).sum())}
    with open(os.path.join(args.out, "data.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"prepare_data: {summary['train']['sequences']} training and {summary['valid']['sequences']} validation "
          f"sequences of {args.seq_len} tokens (vocabulary {vocab}) in {args.out}")


if __name__ == "__main__":
    main()
