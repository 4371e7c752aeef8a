"""Opening a melpipe HDF5 dataset (formats/hdf5.md) for reading: the
zstd filter (hdf5plugin), file locking off (network filesystems), the
chunk cache, the format version, and filters this HDF5 cannot load."""

try:
    import hdf5plugin  # noqa: F401  (registers the zstd filter, 32015)
except ImportError:
    hdf5plugin = None
import h5py

KNOWN_VERSIONS = (1, 2)
FILTER_NAMES = {32015: "zstd", 1: "gzip (deflate)", 2: "shuffle"}
CACHE_SLOTS = 100003  # a prime, many times the chunks a cache holds


class FormatError(ValueError):
    """A file that is not a melpipe dataset this reader knows."""


class MissingFilterError(OSError):
    """A compressed dataset whose HDF5 filter cannot be loaded."""


def open_file(path, cache_bytes=1 << 20):
    """The h5py File at path, read-only, with a chunk cache of
    cache_bytes per dataset. With HDF5's file locking, as any other h5py
    handle of the file in this process has it (HDF5 refuses two handles
    that differ), and without where locking fails (network filesystems;
    HDF5_USE_FILE_LOCKING=FALSE turns it off everywhere)."""
    kw = dict(rdcc_nbytes=int(cache_bytes), rdcc_nslots=CACHE_SLOTS)
    try:
        return h5py.File(path, "r", **kw)
    except OSError as e:
        if "lock" not in str(e):
            raise
        first = e
    try:
        return h5py.File(path, "r", locking=False, **kw)
    except TypeError:  # h5py before 3.5 cannot turn it off by itself
        raise first from None


def text(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "surrogateescape")
    return str(v)


def check_version(f, path):
    """The file's melpipe_hdf5_version, refused when unknown."""
    if "melpipe_hdf5_version" not in f.attrs:
        raise FormatError("'%s' is not a melpipe dataset (no "
                          "melpipe_hdf5_version attribute)" % path)
    v = int(f.attrs["melpipe_hdf5_version"])
    if v not in KNOWN_VERSIONS:
        raise FormatError(
            "'%s' is melpipe HDF5 version %d, which this melpipe package "
            "does not know (it reads versions %s): upgrade the melpipe "
            "package" % (path, v, " and ".join(map(str, KNOWN_VERSIONS))))
    return v


def check_filters(ds, path):
    """Raises MissingFilterError naming what to install when a filter of
    the dataset ds cannot be loaded."""
    plist = ds.id.get_create_plist()
    for i in range(plist.get_nfilters()):
        fid = plist.get_filter(i)[0]
        if h5py.h5z.filter_avail(fid):
            continue
        name = FILTER_NAMES.get(fid, "a filter plugin")
        how = ("pip install hdf5plugin (melpipe imports it by itself)"
               if fid == 32015 else "install the HDF5 filter plugin")
        raise MissingFilterError(
            "'%s': %s is compressed with HDF5 filter %d (%s), which this "
            "h5py cannot load: %s, or set HDF5_PLUGIN_PATH to the folder "
            "of melpipe's libh5zstd.so (bin/plugins in the source tree, "
            "PREFIX/lib/melpipe/hdf5-plugins once installed) before "
            "Python starts" % (path, ds.name, fid, name, how))


def clip_rows(attrs):
    """(K, N) such that row r of /clips holds clip index K + r * N:
    the shard K/N of a shard file (its root attribute shard,
    formats/hdf5.md, Shard files), (0, 1) in a whole or merged file.
    The groups' clip columns hold clip indices, the whole job's."""
    shard = attrs.get("shard")
    if shard is None:
        return 0, 1
    try:
        k, n = (int(x) for x in str(shard).split("/"))
    except ValueError:
        raise FormatError("unreadable shard attribute '%s'" % shard) \
            from None
    if not 0 <= k < n:
        raise FormatError("unreadable shard attribute '%s'" % shard)
    return k, n


def clip_row(attrs, clip, rows, path):
    """The row of /clips (of rows rows) that holds clip index clip, or
    IndexError naming the clip and the clips the file holds."""
    k, n = clip_rows(attrs)
    r, off = divmod(clip - k, n)
    if clip >= 0 and off == 0 and 0 <= r < rows:
        return r
    last = k + (rows - 1) * n
    if rows <= 2:
        which = ["no clips", "clip %d" % k,
                 "clips %d and %d" % (k, last)][rows]
    elif n == 1:
        which = "clips 0 to %d" % last
    else:
        which = "clips %d, %d, ..., %d" % (k, k + n, last)
    shard = " (shard %d/%d)" % (k, n) if n > 1 or "shard" in attrs else ""
    raise IndexError("clip %d is not in '%s'%s, which holds %s"
                     % (clip, path, shard, which))


def root_attrs(f):
    """The root attributes as Python values (strings decoded)."""
    out = {}
    for k, v in f.attrs.items():
        if hasattr(v, "shape") and v.shape == ():
            v = v.item()
        if isinstance(v, bytes):
            v = text(v)
        elif hasattr(v, "dtype") and v.dtype.kind in "OS":
            v = [text(x) for x in v]
        out[k] = v
    return out
