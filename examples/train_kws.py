#!/usr/bin/env python3
"""train_kws - train a small keyword-spotting CNN on `make demo`'s dataset.

Usage: PYTHONPATH=python python3 examples/train_kws.py demo/commands.h5 \\
           [--epochs 20] [--device auto|cpu|cuda] [--seed 0] [--workers 2]

demo/commands.h5 holds ten spoken command words, each row a log-mel
spectrogram of one second ([40 mels, 101 frames], float16), split by
hash into training, validation and testing. The script reads them with
melpipe.MelDataset and melpipe.torch.loader, normalises each mel band
with the training split's mean and deviation (MelDataset.stats()),
augments training batches with a random time shift and one frequency
and one time mask (SpecAugment), and trains a four-layer CNN (about 47k
weights) with Adam and a cosine schedule. It prints the validation
accuracy after every epoch, and at the end the testing accuracy of the
epoch with the best validation accuracy: the testing split is looked at
once, and nothing is learnt from the validation split but that choice.
The seed fixes the weights, the batch order and the augmentation.

Needs numpy, h5py and torch; a CPU runs it in about a minute.
"""
import argparse
import os
import sys
import time

import numpy as np

try:
    import melpipe
except ImportError:  # run from a checkout: the package beside examples/
    sys.path.insert(0, os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "python"))
    import melpipe

SHIFT = 10       # frames: random time shift of up to 0.1 s either way
FREQ_MASK = 6    # mel bands masked at most
TIME_MASK = 12   # frames masked at most


def parse(argv=None):
    ap = argparse.ArgumentParser(
        prog="train_kws.py",
        description="Train a small keyword-spotting CNN on melpipe's demo "
        "dataset (make demo) and print its accuracy.")
    ap.add_argument("file", metavar="FILE.h5", help="demo/commands.h5")
    ap.add_argument("--epochs", type=int, default=20,
                    help="epochs (default 20)")
    ap.add_argument("--device", default="auto",
                    help="auto (cuda where available), cpu or cuda")
    ap.add_argument("--seed", type=int, default=0, help="default 0")
    ap.add_argument("--batch", type=int, default=32, help="default 32")
    ap.add_argument("--lr", type=float, default=3e-3, help="default 3e-3")
    ap.add_argument("--workers", type=int, default=2,
                    help="DataLoader workers (default 2)")
    a = ap.parse_args(argv)
    if a.epochs < 1 or a.batch < 1 or a.workers < 0:
        ap.error("--epochs and --batch must be at least 1, --workers 0")
    return a


def open_splits(path):
    """MelDatasets of the three splits (float32 items), the training
    split's per-band mean and deviation; no torch needed."""
    sets = {s: melpipe.MelDataset(path, s, dtype="float32")
            for s in ("training", "validation", "testing")}
    train = sets["training"]
    if train.kind != "features" or train.layout != "fixed":
        raise ValueError("'%s' is not a fixed-layout features dataset"
                         % path)
    if len(train) == 0 or train.num_classes < 2:
        raise ValueError("'%s' has no labelled training rows" % path)
    stats = train.stats()
    return sets, stats.mean, np.maximum(stats.std, 1e-3)


def build(torch, n_mels, n_classes):
    nn = torch.nn

    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(
        *block(1, 16), nn.MaxPool2d(2),
        *block(16, 32), nn.MaxPool2d(2),
        *block(32, 48), nn.MaxPool2d(2),
        *block(48, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Dropout(0.2), nn.Linear(64, n_classes))


def augment(torch, x, gen):
    """x [B, n_mels, T] normalised: each row shifted in time by up to
    SHIFT frames (zeros, the mean, come in), then one band of up to
    FREQ_MASK mels and one stretch of up to TIME_MASK frames set to 0."""
    b, m, t = x.shape
    dev = x.device

    def ints(hi, lo=0):
        return torch.randint(lo, hi, (b, 1), generator=gen).to(dev)

    frames = torch.arange(t, device=dev).expand(b, t)
    src = frames - ints(SHIFT + 1, -SHIFT)
    inside = (src >= 0) & (src < t)
    x = torch.gather(x, 2, src.clamp(0, t - 1).unsqueeze(1).expand(b, m, t))
    x = x * inside.unsqueeze(1)
    bands = torch.arange(m, device=dev).expand(b, m)
    f0, fw = ints(m), ints(FREQ_MASK + 1)
    x = x * ~((bands >= f0) & (bands < f0 + fw)).unsqueeze(2)
    t0, tw = ints(t), ints(TIME_MASK + 1)
    return x * ~((frames >= t0) & (frames < t0 + tw)).unsqueeze(1)


def accuracy(torch, model, loader, norm, device):
    model.eval()
    right = n = 0
    with torch.no_grad():
        for x, y in loader:
            x = norm(x.to(device, non_blocking=True))
            pred = model(x.unsqueeze(1)).argmax(1).cpu()
            right += int((pred == y).sum())
            n += len(y)
    return right / max(1, n)


def train(a, sets, mean, std):
    import torch
    import melpipe.torch as mt

    torch.manual_seed(a.seed)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    if a.device == "auto":
        a.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(a.device)
    gen = torch.Generator().manual_seed(a.seed)
    mean_t = torch.from_numpy(mean).to(device)[:, None]
    std_t = torch.from_numpy(std).to(device)[:, None]

    def norm(x):
        return (x - mean_t) / std_t

    kw = dict(num_workers=a.workers, seed=a.seed,
              pin_memory=device.type == "cuda")
    if a.workers:
        kw["persistent_workers"] = True
    loaders = {"training": mt.loader(sets["training"], a.batch, **kw)}
    for s in ("validation", "testing"):
        loaders[s] = mt.loader(sets[s], 256, shuffle=False, **kw)
    model = build(torch, sets["training"].n_mels,
                  sets["training"].num_classes).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=1e-3)
    steps = a.epochs * len(loaders["training"])
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, a.lr, total_steps=steps)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.05)
    print("train_kws: %d/%d/%d rows, %d labels, %d weights, on %s"
          % (len(sets["training"]), len(sets["validation"]),
             len(sets["testing"]), sets["training"].num_classes,
             sum(p.numel() for p in model.parameters()), device),
          flush=True)
    best, best_state, t0 = -1.0, None, time.time()
    for epoch in range(a.epochs):
        loaders["training"].batch_sampler.set_epoch(epoch)
        model.train()
        total = seen = 0
        for x, y in loaders["training"]:
            x = augment(torch, norm(x.to(device, non_blocking=True)), gen)
            y = y.to(device, non_blocking=True)
            loss = loss_fn(model(x.unsqueeze(1)), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(y)
            seen += len(y)
        val = accuracy(torch, model, loaders["validation"], norm, device)
        print("epoch %2d  loss %.3f  validation accuracy %.1f%%  (%.0f s)"
              % (epoch + 1, total / seen, 100 * val, time.time() - t0),
              flush=True)
        if val > best:
            best = val
            best_state = {k: v.detach().clone()
                          for k, v in model.state_dict().items()}
    model.load_state_dict(best_state)
    test = accuracy(torch, model, loaders["testing"], norm, device)
    print("best validation accuracy %.1f%%; testing accuracy %.1f%% "
          "(that epoch's model)" % (100 * best, 100 * test))
    return best, test


def main(argv=None):
    a = parse(argv)
    if not os.path.isfile(a.file):
        sys.stderr.write("train_kws.py: no file '%s' (make demo makes "
                         "demo/commands.h5)\n" % a.file)
        return 1
    try:
        sets, mean, std = open_splits(a.file)
    except (OSError, KeyError, ValueError) as e:
        sys.stderr.write("train_kws.py: %s\n" % e)
        return 1
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.stderr.write("train_kws.py: torch is not installed: pip "
                         "install torch (the dataset reads fine: %d "
                         "training rows)\n" % len(sets["training"]))
        return 1
    train(a, sets, mean, std)
    return 0


if __name__ == "__main__":
    sys.exit(main())
