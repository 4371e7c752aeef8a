"""What a stream's records stand for: the windows of a windows record as
audio records, and those of a features-windows record as features
records (expand), and an item in pieces as one record (join)."""
from ._format import (DTYPES, F_CONT, F_MORE, T_AUDIO, T_FEATURES,
                      T_FWINDOWS, WINDOWED, type_name)


def window(it, i):
    """Window i of a windows record it, as the audio record it stands
    for: offset + i * win_hop, segment + i, the win_len frames from frame
    i * win_hop of the payload (zeros past its end), window fields 0.
    Window i of a features-windows record, as the features record it
    stands for: offset + i * win_hop, segment + i, the i-th [dim0][dim1]
    matrix of the payload, window fields 0. The record's source record
    (src) goes with its first window only."""
    if it.type not in WINDOWED or not 0 <= i < it.n_windows:
        raise IndexError("no window %d in a %s record"
                         % (i, type_name(it.type)))
    start = i * it.win_hop
    src = it.src if i == 0 else None
    if it.type == T_FWINDOWS:
        size = it.dim0 * it.dim1 * DTYPES[it.dtype][1]
        return it.copy(type=T_FEATURES, offset=it.offset + start,
                       segment=it.segment + i, win_len=0, win_hop=0,
                       n_windows=0, win_flags=0, src=src,
                       data=it.data[i * size:(i + 1) * size])
    frame = DTYPES[it.dtype][1] * it.dim1
    part = it.data[start * frame:(start + it.win_len) * frame]
    return it.copy(type=T_AUDIO, offset=it.offset + start,
                   segment=it.segment + i, dim0=it.win_len, win_len=0,
                   win_hop=0, n_windows=0, win_flags=0, src=src,
                   data=part + bytes(it.win_len * frame - len(part)))


def expand(items):
    """items with each windows record replaced by its windows (audio
    records) and each features-windows record by its windows (features
    records), in order: what a stage that wants one record per window
    sees. A stream of features-windows records expands to the features
    records a stream of version 5 holds for the same windows."""
    for it in items:
        if it.type in WINDOWED:
            for i in range(it.n_windows):
                yield window(it, i)
        else:
            yield it


def _joined(pieces, cut_short):
    first = pieces[0]
    it = first.copy(flags=0, clip_samples=pieces[-1].clip_samples,
                    cut_short=cut_short, pieces=len(pieces))
    if it.type == T_AUDIO:
        it.dim0 = sum(p.dim0 for p in pieces)
        it.data = b"".join(p.data for p in pieces)
        return it
    es, rows = DTYPES[it.dtype][1], []
    it.dim1 = sum(p.dim1 for p in pieces)
    for m in range(it.dim0):
        rows += [p.data[m * p.dim1 * es:(m + 1) * p.dim1 * es]
                 for p in pieces]
    it.data = b"".join(rows)
    return it


def join(items):
    """items with each item in pieces replaced by the one record it stands
    for (formats/record.md, Items in pieces): samples, or features
    columns, of its pieces side by side; the first piece's offset; the
    last piece's clip_samples; flags 0; pieces: how many records it came
    in. An item cut short (a skipped record after a piece flagged more)
    gives the record of the pieces kept, cut_short True, then the skipped
    record. A features item in pieces is as its pieces were written, not
    raised to its maximum - top_db (h5pack does that as it stores it).
    The records must be a valid stream's, in order (as Reader gives
    them)."""
    open_item = None
    for it in items:
        if open_item is not None:
            if it.flags & F_CONT:
                open_item.append(it)
                if not it.flags & F_MORE:
                    yield _joined(open_item, False)
                    open_item = None
                continue
            yield _joined(open_item, True)  # a skipped record follows
            open_item = None
        if it.flags & F_MORE:
            open_item = [it]
            continue
        yield it
    if open_item is not None:
        raise ValueError("the records end after a piece flagged more")
