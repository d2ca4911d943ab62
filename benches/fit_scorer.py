#!/usr/bin/env python3
"""Fits the extractive summarizer's sentence scorer (src/daemon/summarize/scorer.json).

usage: benches/fit_scorer.py --root CORPUS [--bin target/release/seqgpt] [--out scorer.json]
                             [--golden tests/fixtures/scorer/golden.json] [--force]

CORPUS is a multi-genre corpus in the summary kit's layout (manifest-train.tsv with `train` and
`val` splits by source, corpus/NAME.pdf, ref/NAME.abstract.txt: the authors' abstract).

0. Vocabulary: which terms documents tend to repeat in their abstracts (from `train`; written
   to abstract_vocab.tsv, then the binary is rebuilt with it).
0b. Key terms: which of a document's terms its abstract uses, from how the document uses each
   (the term table `--explain` prints): a logistic regression on `train` (the vocabulary
   column from a table made without the document's fold of sources), written to
   keyterms.json, then the binary is rebuilt with it. Each sentence's `keyterms` feature is
   the sum of its terms' probabilities per word.
1. Features: `seqgpt summarize --local --explain` on the input pages of every document (the
   pages after the abstract) gives each sentence's feature vector, exactly as the daemon
   computes it (cached in CORPUS/features/; --force recomputes).
2. Labels: the greedy ROUGE oracle against the abstract (add the candidate sentence that most
   raises ROUGE-1 F1 + ROUGE-2 F1, rouge_score tokens, stemmed, budget = the abstract's words).
3. Fit, on the `train` candidates, features standardized with train's mean and spread: an
   L2-regularized logistic regression and a listwise softmax (both by Newton's method) on the
   oracle's labels, the same softmax pulled towards a prior instead of towards zero (the
   linear model closest to the ranking used before weights were learned, with the
   `keyterms` weight that gives train's best top-score selection), and a direct fit:
   that prior, then coordinate ascent on train's ROUGE of a top-score selection.
   `val` chooses among them (and the regularization, or the rounds) by the same ROUGE, so no
   weight is searched on `val` and none on the documents that judge the result.
4. Writes the weights (with this command and the figures) and a golden: the scores the fitted
   model gives the sentences of a fixed PDF (tests/fixtures/pdf-samples/report-3pages.pdf),
   which the daemon's unit test must reproduce.

Needs numpy and rouge-score (the summary kit's venv).
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys

for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_v, '1')
import numpy as np  # noqa: E402
from rouge_score import tokenizers  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOK = tokenizers.DefaultTokenizer(use_stemmer=True)
_cache = {}


def toks(text):
    out = []
    for w in text.split():
        t = _cache.get(w)
        if t is None:
            t = _cache[w] = TOK.tokenize(w)
        out.extend(t)
    return out


def ngrams(t, n):
    c = {}
    for i in range(len(t) - n + 1):
        k = tuple(t[i:i + n])
        c[k] = c.get(k, 0) + 1
    return c


def f1(cand, ref, nref):
    if not cand or not nref:
        return 0.0
    hit = sum(min(v, ref.get(k, 0)) for k, v in cand.items())
    p, r = hit / max(1, sum(cand.values())), hit / nref
    return 0.0 if hit == 0 else 2 * p * r / (p + r)


class Rouge:
    """ROUGE-1 + ROUGE-2 F1 of a set of sentences (cut to the budget) against a reference."""

    def __init__(self, ref, budget):
        rt = toks(ref)
        self.r1, self.r2 = ngrams(rt, 1), ngrams(rt, 2)
        self.n1, self.n2 = sum(self.r1.values()), sum(self.r2.values())
        self.budget = budget

    def value(self, sents):
        words = []
        for s in sents:
            words.extend(s.split())
        t = toks(' '.join(words[:self.budget]))
        return f1(ngrams(t, 1), self.r1, self.n1) + f1(ngrams(t, 2), self.r2, self.n2)


def oracle(texts, rouge):
    vocab = set(rouge.r1.keys())
    cand = [i for i, s in enumerate(texts) if any((t,) in vocab for t in toks(s))]
    sel, best = [], 0.0
    while True:
        gain, pick = best, None
        for i in cand:
            if i in sel:
                continue
            v = rouge.value([texts[j] for j in sorted(sel + [i])])
            if v > gain + 1e-12:
                gain, pick = v, i
        if pick is None:
            return sel
        sel.append(pick)
        best = gain


def features(args, row):
    path = os.path.join(args.root, 'features', row['name'] + '.json')
    if os.path.exists(path) and not args.force:
        with open(path, encoding='utf-8') as f:
            return json.load(f)
    pdf = os.path.join(args.root, 'corpus', row['name'] + '.pdf')
    cmd = [args.bin, 'summarize', '--local', '--explain', pdf, '--pages', row['input_pages'],
           '--max-words', row['abstract_words']]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        print(f"[fit] {row['name']}: {r.stderr.strip()[:200]}", file=sys.stderr)
        return None
    v = json.loads(r.stdout)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(v, f)
    return v


def fit_logistic(docs, mean, scale, lam, iters=30):
    """L2-regularized logistic regression by Newton's method (bias not regularized); each
    document weighs the same, whatever its length."""
    A = np.vstack([np.hstack([(d['X'] - mean) / scale, np.ones((len(d['y']), 1))]) for d in docs])
    y = np.concatenate([d['y'] for d in docs])
    sw = np.concatenate([np.full(len(d['y']), 1.0 / len(d['y'])) for d in docs]) * len(y) / len(docs)
    dim = A.shape[1]
    w = np.zeros(dim)
    reg = np.full(dim, lam)
    reg[-1] = 0.0
    for _ in range(iters):
        p = 1 / (1 + np.exp(-A @ w))
        g = A.T @ (sw * (p - y)) + reg * w
        H = (A * (sw * p * (1 - p))[:, None]).T @ A + np.diag(reg) + 1e-9 * np.eye(dim)
        step = np.linalg.solve(H, g)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w[:-1], w[-1]


def fit_listwise(docs, mean, scale, lam, iters=30, start=None):
    """A softmax over each document's sentences, fitted to the oracle's choice (ListNet with
    the oracle's sentences as the target distribution), L2-regularized, by Newton's method.
    Only the order within a document matters; the bias then puts the mean probability at the
    oracle's rate."""
    Zs = [((d['X'] - mean) / scale, d['y'] / d['y'].sum()) for d in docs if d['y'].sum() > 0]
    dim = Zs[0][0].shape[1]
    # With `start`, the penalty pulls towards it instead of towards 0 (a prior).
    w0 = np.zeros(dim) if start is None else start.copy()
    w = w0.copy()
    for _ in range(iters):
        g = lam * (w - w0)
        H = lam * np.eye(dim)
        for Z, t in Zs:
            z = Z @ w
            p = np.exp(z - z.max())
            p /= p.sum()
            g += Z.T @ (p - t)
            Zp = Z.T @ p
            H += (Z * p[:, None]).T @ Z - np.outer(Zp, Zp)
        step = np.linalg.solve(H + 1e-9 * np.eye(dim), g)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w, listwise_bias(docs, mean, scale, w)


def listwise_bias(docs, mean, scale, w):
    """The bias that gives the mean probability over `docs`' sentences the oracle's rate."""
    allz = np.concatenate([((d['X'] - mean) / scale) @ w for d in docs])
    rate = np.mean(np.concatenate([d['y'] for d in docs]))
    # The bias that gives the mean probability the oracle's rate (bisection).
    lo, hi = -50.0, 50.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.mean(1 / (1 + np.exp(-(allz + mid)))) > rate:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def prior(X, names):
    """The ranking the summarizer used before it learned its weights, in log form (a product
    of factors: centrality^0.5, section, place, title, cue phrases, words of abstracts,
    length, prose share^2, list items): the starting point of the direct fit."""
    f = lambda n: X[:, names.index(n)]  # noqa: E731
    sec = sum(f('sec_' + k) * math.log(v) for k, v in
              dict(front=1.75, abstract=1.5, introduction=1.3, background=1.4, body=1.4, conclusion=2.2, appendix=0.25).items())
    place = np.log(1 + 0.35 * f('block_lead')) + (f('first_in_block') > 0) * math.log(1.2) + np.log(1 + 0.25 * (1 - f('doc_pos')) ** 2)
    words = np.exp(f('words_log'))
    length = np.log(np.where(words <= 7, 0.2, np.where(words <= 11, 0.35, np.where(words >= 37, 0.65, 1.0))))
    return (0.5 * f('centrality_log') + sec + place + np.log(1 + f('title')) + (f('cue') > 0) * math.log(1.15)
            + np.log(1 + f('abstract_words')) + length + 2 * f('prose_log') + (f('list_item') > 0) * math.log(1.4))


def selection_rouge(docs, mean, scale, w):
    return np.mean([d['rouge'].value(top_select(d, ((d['X'] - mean) / scale) @ w)) for d in docs])


def prior_weights(docs, mean, scale, names):
    """The linear model closest to [`prior`]: least squares over `docs`' sentences."""
    A = np.vstack([np.hstack([(d['X'] - mean) / scale, np.ones((len(d['X']), 1))]) for d in docs])
    t = np.concatenate([prior(d['X'], names) for d in docs])
    return np.linalg.lstsq(A, t, rcond=None)[0][:-1]


def fit_direct(docs, mean, scale, start, rounds):
    """From `start` (the prior), coordinate ascent on `train`'s selection ROUGE (each weight
    in turn moves by +-step where that helps; the step halves each round). Returns the
    weights after each round."""
    w = start.copy()
    best, step, out = selection_rouge(docs, mean, scale, w), 0.3, [w.copy()]
    for _ in range(rounds):
        for k in range(len(w)):
            for delta in (step, -step):
                w2 = w.copy()
                w2[k] += delta
                v = selection_rouge(docs, mean, scale, w2)
                if v > best + 1e-6:
                    best, w = v, w2
                    break
        out.append(w.copy())
        step /= 2
    return out


def top_select(doc, scores):
    """Best-first selection up to the budget, in document order, a sentence that points back
    only after the one before it (the proxy on which `val` chooses the fit)."""
    order = sorted(range(len(doc['texts'])), key=lambda i: -scores[i])
    chosen, used = set(), 0
    progress = True
    while progress:
        progress = False
        for i in order:
            w = len(doc['texts'][i].split())
            if i in chosen or used + w > doc['budget']:
                continue
            if doc['dangling'][i] and not (i - 1 in chosen and doc['follows'][i]):
                continue
            chosen.add(i)
            used += w
            progress = True
            break
    return [doc['texts'][i] for i in sorted(chosen)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--root', required=True)
    ap.add_argument('--bin', default=os.path.join(REPO, 'target/release/seqgpt'))
    ap.add_argument('--out', default=os.path.join(REPO, 'src/daemon/summarize/scorer.json'))
    ap.add_argument('--golden', default=os.path.join(REPO, 'tests/fixtures/scorer/golden.json'))
    ap.add_argument('--vocab', default=os.path.join(REPO, 'src/daemon/summarize/abstract_vocab.tsv'))
    ap.add_argument('--keyterms', default=os.path.join(REPO, 'src/daemon/summarize/keyterms.json'))
    ap.add_argument('--force', action='store_true')
    args = ap.parse_args()
    vocabulary(args)
    print('[fit] rebuilding the binary with the new vocabulary', file=sys.stderr)
    subprocess.run(['cargo', 'build', '--release', '--bin', 'seqgpt'], cwd=REPO, check=True)
    args.force = True
    fit_keyterms(args)
    print('[fit] rebuilding the binary with the new key-term model', file=sys.stderr)
    subprocess.run(['cargo', 'build', '--release', '--bin', 'seqgpt'], cwd=REPO, check=True)
    fit_weights(args)


def vocab_table(items):
    """The vocabulary of (source, document terms, abstract terms) items: for each term,
    log((A + 1) / (D + 2)) less the same for all terms together, where D is the number of
    documents whose input has the term and A how many of those have it in their abstract too;
    only terms in at least 8 documents from 4 sources, clipped to [-2, 2]."""
    with_term, in_abstract, sources = {}, {}, {}
    for source, doc_terms, ref in items:
        for t in doc_terms:
            with_term[t] = with_term.get(t, 0) + 1
            sources.setdefault(t, set()).add(source)
            if t in ref:
                in_abstract[t] = in_abstract.get(t, 0) + 1
    base = math.log((sum(in_abstract.values()) + 1) / (sum(with_term.values()) + 2))
    return {t: max(-2.0, min(2.0, math.log((in_abstract.get(t, 0) + 1) / (d + 2)) - base))
            for t, d in with_term.items() if d >= 8 and len(sources[t]) >= 4}


def vocab_items(args, rows):
    items = {}
    for row, v in explained(args, rows, ('train',)):
        ref = abstract_terms(args, row)
        if ref is not None:
            items[row['name']] = (row.get('source', row['name']), set(t for s in v['sentences'] for t in s['terms']), ref)
    return items


def vocabulary(args):
    """Step 1: the abstract vocabulary from `train` ([`vocab_table`]), written for the daemon."""
    table = vocab_table(vocab_items(args, manifest(args)).values())
    with open(args.vocab, 'w', encoding='utf-8') as f:
        for t in sorted(table):
            f.write(f'{t}\t{table[t]:.4f}\n')
    print(f'[fit] wrote {args.vocab}: {len(table)} terms', file=sys.stderr)


def out_of_fold_vocab(args, rows, docs, names, folds=5):
    """The `vocab` feature of each `train` sentence recomputed from a table fitted without its
    document's fold (folds by source): with the table of all of `train`, a document's own
    abstract would be in its feature, and the fit would learn to trust it."""
    col = names.index('vocab')
    for d in docs:
        table = fold_table(args, rows, d['name'], folds)
        if table is None:
            continue
        for k, ts in enumerate(d['terms']):
            d['X'][k, col] = sum(table.get(t, 0.0) for t in ts) / max(1, len(ts))


_fold_tables = {}


def fold_table(args, rows, name, folds=5):
    """The abstract vocabulary made from `train` without the fold of sources that holds
    document `name` (None for a document outside `train`)."""
    if not _fold_tables:
        items = vocab_items(args, rows)
        by_source = sorted({src for src, _, _ in items.values()})
        fold_of = {src: k % folds for k, src in enumerate(by_source)}
        tables = [vocab_table(it for n, it in items.items() if fold_of[it[0]] != k) for k in range(folds)]
        _fold_tables.update({n: tables[fold_of[it[0]]] for n, it in items.items()})
    return _fold_tables.get(name)


def term_rows(args, rows, row, v):
    """A document's terms and their key-term features (the daemon's table), the vocabulary
    column made without the document's own fold when it is a `train` document."""
    names = v['term_features']
    terms = [t for t, _ in v['terms']]
    X = np.array([x for _, x in v['terms']], float).reshape(len(terms), len(names))
    table = fold_table(args, rows, row['name']) if row['split'] == 'train' else None
    if table is not None and len(terms):
        X[:, names.index('vocab')] = [table.get(t, 0.0) for t in terms]
    return terms, X


def fit_keyterms(args):
    """Step 0b: the key-term model, on `train`'s terms, written for the daemon."""
    rows = manifest(args)
    docs = {'train': [], 'val': []}
    names = None
    for row, v in explained(args, rows, docs):
        ref = abstract_terms(args, row)
        if ref is None or not v['terms']:
            continue
        names = v['term_features']
        terms, X = term_rows(args, rows, row, v)
        docs[row['split']].append(dict(X=X, y=np.array([float(t in ref) for t in terms])))
    X = np.vstack([d['X'] for d in docs['train']])
    mean, scale = X.mean(0), X.std(0)
    scale[scale < 1e-9] = 1.0
    w, b = fit_logistic(docs['train'], mean, scale, 1.0)
    p = np.concatenate([((d['X'] - mean) / scale) @ w + b for d in docs['val']])
    y = np.concatenate([d['y'] for d in docs['val']])
    rank = np.empty(len(p))
    rank[np.argsort(p, kind='stable')] = np.arange(len(p))
    auc = (rank[y == 1].sum() - y.sum() * (y.sum() - 1) / 2) / (y.sum() * (len(y) - y.sum()))
    model = dict(features=names, mean=[round(float(x), 12) for x in mean], scale=[round(float(x), 12) for x in scale],
                 weights=[round(float(x), 12) for x in w], bias=round(float(b), 12),
                 fitted=dict(command='benches/fit_scorer.py --root CORPUS (docs/SUMMARIZE.md)',
                             train_documents=len(docs['train']), train_terms=int(len(X)),
                             val_auc=round(float(auc), 4)))
    with open(args.keyterms, 'w', encoding='utf-8') as f:
        json.dump(model, f, indent=1)
        f.write('\n')
    print(f"[fit] wrote {args.keyterms}: {len(X)} train terms, val AUC {auc:.3f}; weights:", file=sys.stderr)
    for k in np.argsort(-np.abs(w)):
        print(f"  {names[k]:>14} {w[k]:+.3f}", file=sys.stderr)


def out_of_fold_keyterms(args, rows, docs, names):
    """The `keyterms` feature of each `train` sentence recomputed with term probabilities
    whose vocabulary column is out of fold (as for `vocab`); for `val` the recomputation
    must give the daemon's value, which checks that both compute the same."""
    with open(args.keyterms, encoding='utf-8') as f:
        km = json.load(f)
    mean, scale, w = (np.array(km[k]) for k in ('mean', 'scale', 'weights'))
    col = names.index('keyterms')
    worst = 0.0
    for d in docs:
        terms, X = term_rows(args, rows, d['row'], d['explain'])
        prob = dict(zip(terms, 1 / (1 + np.exp(-(((X - mean) / scale) @ w + km['bias'])))))
        value = np.array([sum(prob[t] for t in set(ts)) / max(1, n) for ts, n in zip(d['terms'], d['words'])])
        if d['row']['split'] == 'train':
            d['X'][:, col] = value
        else:
            worst = max(worst, float(np.abs(value - d['X'][:, col]).max()))
    print(f"[fit] keyterms recomputed here against the daemon's, on val: largest difference {worst:.2e}", file=sys.stderr)
    if worst > 1e-9:
        sys.exit('fit_scorer.py: the keyterms feature differs from the daemon\'s')


_abstract_terms = {}


def abstract_terms(args, row):
    """The terms of a document's abstract, as the daemon reads them (--explain on the text)."""
    if row['name'] in _abstract_terms:
        return _abstract_terms[row['name']]
    path = os.path.join(args.root, 'ref', row['name'] + '.abstract.txt')
    r = subprocess.run([args.bin, 'summarize', '--local', '--text', '--explain', path], capture_output=True, text=True)
    terms = None if r.returncode != 0 else set(t for s in json.loads(r.stdout)['sentences'] for t in s['terms'])
    _abstract_terms[row['name']] = terms
    return terms


def explained(args, rows, splits):
    """(row, --explain output) of each document of `splits` the binary could read."""
    for row in rows:
        if row['split'] in splits:
            v = features(args, row)
            if v is not None:
                yield row, v


def manifest(args):
    with open(os.path.join(args.root, 'manifest-train.tsv'), encoding='utf-8') as f:
        return list(csv.DictReader(f, delimiter='\t'))


def fit_weights(args):
    """Steps 2-4: features with the new vocabulary, oracle labels, the fit, the golden."""
    rows = manifest(args)
    docs = {'train': [], 'val': []}
    names = None
    for row, v in explained(args, rows, docs):
        with open(os.path.join(args.root, 'ref', row['name'] + '.abstract.txt'), encoding='utf-8') as f:
            ref = f.read().strip()
        for k, sent in enumerate(v['sentences']):
            sent['index'] = k
        cands = [s for s in v['sentences'] if s['candidate']]
        if not cands:
            continue
        names = v['features']
        texts = [s['text'] for s in cands]
        budget = int(row['abstract_words'])
        rouge = Rouge(ref, budget)
        label = np.zeros(len(cands))
        label[oracle(texts, rouge)] = 1.0
        # follows[i]: candidate i comes right after candidate i - 1 in the same block.
        follows = [k > 0 and cands[k - 1]['block'] == c['block'] and cands[k - 1]['index'] + 1 == c['index']
                   for k, c in enumerate(cands)]
        docs[row['split']].append(dict(name=row['name'], genre=row.get('genre', ''), texts=texts, budget=budget,
                                       row=row, explain=v, words=[c['words'] for c in cands],
                                       dangling=[c['dangling'] for c in cands], follows=follows,
                                       terms=[c['terms'] for c in cands],
                                       rouge=rouge, X=np.array([s['x'] for s in cands], float), y=label))
        print(f"[fit] {row['split']} {row['name']}: {len(cands)} candidates, {int(label.sum())} oracle",
              file=sys.stderr)
    out_of_fold_vocab(args, rows, docs['train'], names)
    out_of_fold_keyterms(args, rows, docs['train'] + docs['val'], names)
    Xtr = np.vstack([d['X'] for d in docs['train']])
    ytr = np.concatenate([d['y'] for d in docs['train']])
    mean = Xtr.mean(0)
    scale = Xtr.std(0)
    scale[scale < 1e-9] = 1.0
    best = None

    def consider(name, w, b):
        nonlocal best
        val = selection_rouge(docs['val'], mean, scale, w)
        print(f"[fit] {name}: val (R1 + R2) / 2, top-score selection: {50 * val:.2f}", file=sys.stderr)
        if best is None or val > best[0] + 1e-9:
            best = (val, name, w, b)

    for objective, fitter in (('logistic', fit_logistic), ('listwise', fit_listwise)):
        for lam in [1, 10, 100]:
            w, b = fitter(docs['train'], mean, scale, lam)
            consider(f'{objective} l2={lam}', w, b)
    w0 = prior_weights(docs['train'], mean, scale, names)
    # The prior knows no key terms: their weight is the one that gives train's best selection.
    k = names.index('keyterms')
    gains = {}
    for beta in [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]:
        w0[k] = beta
        gains[beta] = selection_rouge(docs['train'], mean, scale, w0)
    w0[k] = max(gains, key=lambda b: (gains[b], -b))
    print(f"[fit] prior's keyterms weight: {w0[k]} (train (R1 + R2) / 2: "
          + ', '.join(f'{b}: {50 * g:.2f}' for b, g in gains.items()) + ')', file=sys.stderr)
    for lam in [1000, 3000, 10000, 30000, 100000]:
        w, b = fit_listwise(docs['train'], mean, scale, lam, start=w0)
        consider(f'listwise from the prior l2={lam}', w, b)
    for k, w in enumerate(fit_direct(docs["train"], mean, scale, w0, rounds=1)):
        # The bias of a direct fit only shifts every score alike: the oracle's rate, as above.
        consider(f'direct rounds={k}', w, listwise_bias(docs['train'], mean, scale, w))
    val, chosen, w, b = best
    model = dict(features=names, mean=[round(float(x), 12) for x in mean], scale=[round(float(x), 12) for x in scale],
                 weights=[round(float(x), 12) for x in w], bias=round(float(b), 12),
                 fitted=dict(command='benches/fit_scorer.py --root CORPUS (docs/SUMMARIZE.md)',
                             train_documents=len(docs['train']), train_sentences=int(len(ytr)),
                             oracle_positives=int(ytr.sum()), val_documents=len(docs['val']),
                             chosen=chosen,
                             val_r1_plus_r2_top_select=round(50 * float(val), 2)))
    with open(args.out, 'w', encoding='utf-8') as f:
        json.dump(model, f, indent=1)
        f.write('\n')
    print(f"[fit] wrote {args.out}: {chosen}; strongest features:", file=sys.stderr)
    for k in np.argsort(-np.abs(w))[:12]:
        print(f"  {names[k]:>18} {w[k]:+.3f}", file=sys.stderr)
    golden(args, model)


def golden(args, model):
    """The scores the model gives a fixed PDF's sentences, computed here from the features the
    binary reports; the daemon's unit test computes them itself and must agree."""
    pdf = os.path.join(REPO, 'tests/fixtures/pdf-samples/report-3pages.pdf')
    r = subprocess.run([args.bin, 'summarize', '--local', '--explain', pdf], capture_output=True, text=True, check=True)
    v = json.loads(r.stdout)
    mean, scale, w = (np.array(model[k]) for k in ('mean', 'scale', 'weights'))
    out = []
    for s in v['sentences']:
        z = model['bias'] + float(((np.array(s['x']) - mean) / scale) @ w)
        out.append(dict(text=s['text'], candidate=s['candidate'],
                        score=(1 / (1 + math.exp(-z))) if s['candidate'] else 0.0))
    os.makedirs(os.path.dirname(args.golden), exist_ok=True)
    with open(args.golden, 'w', encoding='utf-8') as f:
        json.dump(dict(pdf='tests/fixtures/pdf-samples/report-3pages.pdf', sentences=out), f, indent=1, ensure_ascii=False)
        f.write('\n')
    print(f"[fit] wrote {args.golden}: {sum(s['candidate'] for s in out)} scored sentences", file=sys.stderr)


if __name__ == '__main__':
    main()
