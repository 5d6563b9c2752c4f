#include "format/gguf.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "util/error.h"

namespace myriad {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxDims = 4;              // GGML_MAX_DIMS
constexpr int kMaxArrayDepth = 8;
constexpr size_t kMaxNameBytes = 1 << 16;

// Bounds-checked little-endian reads over the file image; every failure names the file and what
// was being read.
class Reader {
  public:
    Reader(const uint8_t* data, size_t size, const std::string& path)
        : data_(data), size_(size), path_(path) {}

    size_t pos() const { return pos_; }
    size_t left() const { return size_ - pos_; }

    template <typename T>
    T read(std::string_view what) {
        if (left() < sizeof(T))
            bad_input("{}: truncated at byte {} reading {} (the file has {} bytes)", path_, pos_,
                      what, size_);
        T v;
        std::memcpy(&v, data_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::string_view string(std::string_view what) {
        const uint64_t n = read<uint64_t>(what);
        if (n > left())
            bad_input("{}: {} has length {}, more than the {} bytes left in the file", path_, what,
                      n, left());
        std::string_view s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return s;
    }

    void skip(uint64_t n, std::string_view what) {
        if (n > left())
            bad_input("{}: {} needs {} bytes, only {} are left in the file", path_, what, n,
                      left());
        pos_ += static_cast<size_t>(n);
    }

    const uint8_t* here() const { return data_ + pos_; }
    const std::string& path() const { return path_; }

  private:
    const uint8_t* data_;
    size_t size_;
    size_t pos_ = 0;
    const std::string& path_;
};

size_t scalar_size(GgufValueType t) {
    switch (t) {
        case GgufValueType::U8:
        case GgufValueType::I8:
        case GgufValueType::BOOL:
            return 1;
        case GgufValueType::U16:
        case GgufValueType::I16:
            return 2;
        case GgufValueType::U32:
        case GgufValueType::I32:
        case GgufValueType::F32:
            return 4;
        case GgufValueType::U64:
        case GgufValueType::I64:
        case GgufValueType::F64:
            return 8;
        case GgufValueType::STRING:
        case GgufValueType::ARRAY:
            return 0;
    }
    return 0;
}

GgufValueType value_type(uint32_t raw, Reader& r, std::string_view what) {
    if (raw > static_cast<uint32_t>(GgufValueType::F64))
        bad_input("{}: {} has value type {}, not a GGUF type (0-12)", r.path(), what, raw);
    return static_cast<GgufValueType>(raw);
}

std::string printable_key(std::string_view key) {
    std::string out;
    for (char c : key.substr(0, 200)) {
        const auto u = static_cast<unsigned char>(c);
        out += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
    }
    return out;
}

// Reads one scalar of type `t` into `v`.
void read_scalar(Reader& r, GgufValueType t, GgufValue& v, std::string_view what) {
    switch (t) {
        case GgufValueType::U8:
            v.u = r.read<uint8_t>(what);
            break;
        case GgufValueType::I8:
            v.i = r.read<int8_t>(what);
            break;
        case GgufValueType::U16:
            v.u = r.read<uint16_t>(what);
            break;
        case GgufValueType::I16:
            v.i = r.read<int16_t>(what);
            break;
        case GgufValueType::U32:
            v.u = r.read<uint32_t>(what);
            break;
        case GgufValueType::I32:
            v.i = r.read<int32_t>(what);
            break;
        case GgufValueType::U64:
            v.u = r.read<uint64_t>(what);
            break;
        case GgufValueType::I64:
            v.i = r.read<int64_t>(what);
            break;
        case GgufValueType::F32:
            v.f = r.read<float>(what);
            break;
        case GgufValueType::F64:
            v.f = r.read<double>(what);
            break;
        case GgufValueType::BOOL: {
            const uint8_t b = r.read<uint8_t>(what);
            if (b > 1)
                bad_input("{}: {} is a bool of value {}, expected 0 or 1", r.path(), what, b);
            v.i = b;
            v.u = b;
            break;
        }
        default:
            break;
    }
    if (t == GgufValueType::U8 || t == GgufValueType::U16 || t == GgufValueType::U32 ||
        t == GgufValueType::U64)
        v.i = v.u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v.u);
    if (t == GgufValueType::I8 || t == GgufValueType::I16 || t == GgufValueType::I32 ||
        t == GgufValueType::I64)
        v.u = v.i < 0 ? 0 : static_cast<uint64_t>(v.i);
}

void read_array(Reader& r, GgufValue& v, std::string_view what, int depth, bool keep);

void read_value(Reader& r, GgufValueType t, GgufValue& v, std::string_view what, int depth,
                bool keep) {
    v.type = t;
    if (t == GgufValueType::STRING) {
        v.str = r.string(what);
    } else if (t == GgufValueType::ARRAY) {
        read_array(r, v, what, depth, keep);
    } else {
        read_scalar(r, t, v, what);
    }
}

void read_array(Reader& r, GgufValue& v, std::string_view what, int depth, bool keep) {
    if (depth > kMaxArrayDepth)
        bad_input("{}: {} nests arrays more than {} deep", r.path(), what, kMaxArrayDepth);
    v.elem = value_type(r.read<uint32_t>(what), r, what);
    v.count = r.read<uint64_t>(what);
    const size_t es = scalar_size(v.elem);
    // Every element takes at least one byte (8 for strings and arrays): a count the rest of the
    // file cannot hold is rejected before anything is allocated.
    const uint64_t min_each = es > 0 ? es : 8;
    if (v.count > r.left() / min_each)
        bad_input("{}: {} is an array of {} {} elements, more than the {} bytes left can hold",
                  r.path(), what, v.count, gguf_value_type_name(v.elem), r.left());
    if (es > 0) {
        v.raw = r.here();
        r.skip(v.count * es, what);
        if (v.elem == GgufValueType::BOOL)
            for (uint64_t k = 0; k < v.count; ++k)
                if (v.raw[k] > 1)
                    bad_input("{}: {}[{}] is a bool of value {}, expected 0 or 1", r.path(), what,
                              k, v.raw[k]);
        return;
    }
    if (v.elem == GgufValueType::STRING) {
        if (keep) v.strings.reserve(static_cast<size_t>(v.count));
        for (uint64_t k = 0; k < v.count; ++k) {
            std::string_view s = r.string(what);
            if (keep) v.strings.push_back(s);
        }
        return;
    }
    for (uint64_t k = 0; k < v.count; ++k) {  // arrays of arrays: validated, not kept
        GgufValue inner;
        read_value(r, GgufValueType::ARRAY, inner, what, depth + 1, false);
    }
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
    static const char* const kNames[] = {"UINT8",  "INT8",    "UINT16", "INT16",  "UINT32",
                                         "INT32",  "FLOAT32", "BOOL",   "STRING", "ARRAY",
                                         "UINT64", "INT64",   "FLOAT64"};
    const auto i = static_cast<size_t>(t);
    return i < std::size(kNames) ? kNames[i] : "?";
}

bool GgufValue::is_integer() const {
    switch (type) {
        case GgufValueType::U8:
        case GgufValueType::I8:
        case GgufValueType::U16:
        case GgufValueType::I16:
        case GgufValueType::U32:
        case GgufValueType::I32:
        case GgufValueType::U64:
        case GgufValueType::I64:
            return true;
        default:
            return false;
    }
}

double GgufValue::number_at(uint64_t k) const {
    const uint8_t* p = raw + k * scalar_size(elem);
    switch (elem) {
        case GgufValueType::F32: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
        case GgufValueType::F64: {
            double d;
            std::memcpy(&d, p, 8);
            return d;
        }
        default:
            return static_cast<double>(integer_at(k));
    }
}

int64_t GgufValue::integer_at(uint64_t k) const {
    const uint8_t* p = raw + k * scalar_size(elem);
    auto get = [p](auto v) {
        std::memcpy(&v, p, sizeof(v));
        return v;
    };
    switch (elem) {
        case GgufValueType::U8:
        case GgufValueType::BOOL:
            return get(uint8_t{});
        case GgufValueType::I8:
            return get(int8_t{});
        case GgufValueType::U16:
            return get(uint16_t{});
        case GgufValueType::I16:
            return get(int16_t{});
        case GgufValueType::U32:
            return get(uint32_t{});
        case GgufValueType::I32:
            return get(int32_t{});
        case GgufValueType::U64: {
            const uint64_t u = get(uint64_t{});
            return u > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(u);
        }
        case GgufValueType::I64:
            return get(int64_t{});
        case GgufValueType::F32:
            return static_cast<int64_t>(get(float{}));
        case GgufValueType::F64:
            return static_cast<int64_t>(get(double{}));
        default:
            return 0;
    }
}

int64_t GgufTensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
}

size_t GgufTensorInfo::row_bytes() const {
    const int64_t ne0 = dims.empty() ? 1 : dims[0];
    return static_cast<size_t>(ne0 / gguf_block_elems(type)) * gguf_block_bytes(type);
}

GgufHeader parse_gguf(const uint8_t* data, size_t size, const std::string& path) {
    Reader r(data, size, path);
    GgufHeader h;
    const uint32_t magic = r.read<uint32_t>("the magic");
    if (magic != kMagic)
        bad_input("{}: not a GGUF file (the first 4 bytes are not \"GGUF\")", path);
    h.version = r.read<uint32_t>("the version");
    if (h.version != 3 && h.version != 2)
        bad_input("{}: GGUF version {} is not supported (myriad reads version 3)", path, h.version);
    const uint64_t n_tensors = r.read<uint64_t>("the tensor count");
    const uint64_t n_kv = r.read<uint64_t>("the metadata count");
    // A metadata entry takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 + 8.
    if (n_kv > r.left() / 13)
        bad_input("{}: header says {} metadata entries, more than the file can hold", path, n_kv);
    if (n_tensors > r.left() / 24)
        bad_input("{}: header says {} tensors, more than the file can hold", path, n_tensors);

    for (uint64_t k = 0; k < n_kv; ++k) {
        const std::string_view key = r.string(fmt::format("the key of metadata entry {}", k));
        const std::string what = fmt::format("metadata {}", printable_key(key));
        GgufValue v;
        read_value(r, value_type(r.read<uint32_t>(what), r, what), v, what, 0, true);
        if (!h.metadata.emplace(std::string(key), std::move(v)).second)
            bad_input("{}: metadata key {} appears twice", path, printable_key(key));
    }

    if (auto it = h.metadata.find("general.alignment"); it != h.metadata.end()) {
        const GgufValue& a = it->second;
        if (!a.is_integer() || a.u == 0 || (a.u & (a.u - 1)) != 0 || a.u > (1u << 20))
            bad_input("{}: metadata general.alignment must be a power of two up to 1 MiB", path);
        h.alignment = a.u;
    }

    h.tensors.reserve(static_cast<size_t>(n_tensors));
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensorInfo t;
        const std::string_view name = r.string(fmt::format("the name of tensor {}", k));
        if (name.empty() || name.size() > kMaxNameBytes)
            bad_input("{}: tensor {} has a name of {} bytes", path, k, name.size());
        t.name = std::string(name);
        const std::string what = fmt::format("tensor {}", printable_key(t.name));
        const uint32_t n_dims = r.read<uint32_t>(what);
        if (n_dims < 1 || n_dims > kMaxDims)
            bad_input("{}: {} has {} dimensions, expected 1 to {}", path, what, n_dims, kMaxDims);
        int64_t numel = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t dim = r.read<uint64_t>(what);
            if (dim == 0 || dim > (uint64_t{1} << 40) ||
                static_cast<uint64_t>(numel) > (uint64_t{1} << 50) / dim)
                bad_input("{}: {} has dimension {} of size {}", path, what, d, dim);
            t.dims.push_back(static_cast<int64_t>(dim));
            numel *= static_cast<int64_t>(dim);
        }
        const uint32_t type = r.read<uint32_t>(what);
        auto supported = gguf_supported_type(type);
        if (!supported)
            bad_input(
                "unsupported tensor type {} in tensor {} of {} (myriad reads F32, F16, BF16, "
                "Q8_0, Q4_0, Q4_K, Q5_K and Q6_K)",
                gguf_type_name(type), printable_key(t.name), path);
        t.type = *supported;
        if (t.dims[0] % gguf_block_elems(t.type) != 0)
            bad_input("{}: {} has rows of {} elements, not a multiple of the {} block of {}", path,
                      what, t.dims[0], gguf_type_name(t.type), gguf_block_elems(t.type));
        t.offset = r.read<uint64_t>(what);
        if (t.offset % h.alignment != 0)
            bad_input("{}: {} has data offset {}, not a multiple of the alignment {}", path, what,
                      t.offset, h.alignment);
        t.nbytes =
            static_cast<uint64_t>(numel / gguf_block_elems(t.type)) * gguf_block_bytes(t.type);
        h.tensors.push_back(std::move(t));
    }

    const uint64_t end_of_infos = r.pos();
    h.data_start = (end_of_infos + h.alignment - 1) / h.alignment * h.alignment;
    if (h.data_start > size && !h.tensors.empty())
        bad_input("{}: truncated: the tensor data would start at byte {}, the file has {}", path,
                  h.data_start, size);
    const uint64_t data_size = size > h.data_start ? size - h.data_start : 0;
    std::vector<size_t> order(h.tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return h.tensors[a].offset < h.tensors[b].offset; });
    std::map<std::string_view, size_t> names;
    for (size_t i = 0; i < h.tensors.size(); ++i) {
        GgufTensorInfo& t = h.tensors[i];
        if (!names.emplace(t.name, i).second)
            bad_input("{}: tensor {} appears twice", path, printable_key(t.name));
        if (t.offset > data_size || t.nbytes > data_size - t.offset)
            bad_input(
                "{}: tensor {} ({} bytes at data offset {}) runs past the end of the file "
                "(truncated or a bad offset)",
                path, printable_key(t.name), t.nbytes, t.offset);
        t.data = data + h.data_start + t.offset;
    }
    for (size_t k = 1; k < order.size(); ++k) {
        const GgufTensorInfo& a = h.tensors[order[k - 1]];
        const GgufTensorInfo& b = h.tensors[order[k]];
        if (a.offset + a.nbytes > b.offset)
            bad_input("{}: tensors {} and {} overlap in the data section", path,
                      printable_key(a.name), printable_key(b.name));
    }
    return h;
}

GgufFile::GgufFile(const std::string& path) : file_(path) {
    header_ = parse_gguf(file_.data(), file_.size(), file_.path());
    for (auto& t : header_.tensors) t.file = &file_.path();
}

bool is_gguf_path(std::string_view path) {
    return path.size() > 5 && path.ends_with(".gguf");
}

namespace {

// "<prefix>-00001-of-00003.gguf" -> {prefix, 1, 3}; nullopt when the name has no split form.
struct SplitName {
    std::string prefix;
    int no = 0, count = 0;
};

std::optional<SplitName> split_name(const std::string& path) {
    // ...-NNNNN-of-NNNNN.gguf: 20 characters after the prefix.
    constexpr size_t kTail = 20;
    if (path.size() <= kTail) return std::nullopt;
    const std::string tail = path.substr(path.size() - kTail);
    auto digits = [&](size_t at) {
        int v = 0;
        for (size_t i = at; i < at + 5; ++i) {
            if (tail[i] < '0' || tail[i] > '9') return -1;
            v = v * 10 + (tail[i] - '0');
        }
        return v;
    };
    if (tail[0] != '-' || tail.compare(6, 4, "-of-") != 0 || tail.compare(15, 5, ".gguf") != 0)
        return std::nullopt;
    SplitName s{path.substr(0, path.size() - kTail), digits(1), digits(10)};
    if (s.no < 1 || s.count < 1) return std::nullopt;
    return s;
}

}  // namespace

std::shared_ptr<GgufModel> GgufModel::open(const std::string& path) {
    auto m = std::make_shared<GgufModel>();
    m->path_ = path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) bad_input("{}: no such file", path);
    m->files_.push_back(std::make_unique<GgufFile>(path));
    const auto& meta = m->files_.front()->header().metadata;
    auto meta_int = [&](const GgufFile& f, const char* key) -> std::optional<int64_t> {
        auto it = f.header().metadata.find(key);
        if (it == f.header().metadata.end()) return std::nullopt;
        if (!it->second.is_integer())
            bad_input("{}: metadata {} has type {}, expected an integer", f.path(), key,
                      gguf_value_type_name(it->second.type));
        return it->second.i;
    };
    const int64_t count = meta_int(*m->files_.front(), "split.count").value_or(1);
    if (meta.count("split.count") && count > 1) {
        const int64_t no = meta_int(*m->files_.front(), "split.no").value_or(0);
        auto name = split_name(path);
        if (!name)
            bad_input(
                "{}: metadata split.count is {} but the file name is not of the form "
                "NAME-00001-of-{:05d}.gguf, so the other splits cannot be found",
                path, count, count);
        if (no != 0 || name->no != 1)
            bad_input("{}: this is split {} of {}; pass the first one, {}-00001-of-{:05d}.gguf",
                      path, no + 1, count, name->prefix, name->count);
        if (count > 9999 || name->count != count)
            bad_input("{}: metadata split.count is {} but the file name says {}", path, count,
                      name->count);
        for (int64_t i = 2; i <= count; ++i) {
            const std::string p = fmt::format("{}-{:05d}-of-{:05d}.gguf", name->prefix, i, count);
            if (!std::filesystem::is_regular_file(p, ec))
                bad_input("{}: split {} of {} is missing: {} does not exist", path, i, count, p);
            m->files_.push_back(std::make_unique<GgufFile>(p));
            const GgufFile& f = *m->files_.back();
            if (meta_int(f, "split.no") != i - 1 || meta_int(f, "split.count") != count)
                bad_input("{}: metadata split.no / split.count do not say split {} of {}", p, i - 1,
                          count);
        }
    }
    for (const auto& f : m->files_) {
        for (const GgufTensorInfo& t : f->header().tensors) {
            auto [it, inserted] = m->tensors_.emplace(t.name, &t);
            if (!inserted)
                bad_input("{}: tensor {} is also in {}", f->path(), printable_key(t.name),
                          *it->second->file);
        }
    }
    if (auto total = meta_int(*m->files_.front(), "split.tensors.count");
        total && *total != static_cast<int64_t>(m->tensors_.size()))
        bad_input("{}: metadata split.tensors.count is {} but the {} file(s) hold {} tensors", path,
                  *total, m->files_.size(), m->tensors_.size());
    return m;
}

const GgufValue* GgufModel::find(std::string_view key) const {
    const auto& meta = metadata();
    auto it = meta.find(key);
    return it == meta.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufModel::tensor(std::string_view name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : it->second;
}

std::vector<const GgufTensorInfo*> GgufModel::tensors() const {
    std::vector<const GgufTensorInfo*> out;
    for (const auto& f : files_)
        for (const GgufTensorInfo& t : f->header().tensors) out.push_back(&t);
    return out;
}

std::optional<int64_t> GgufModel::opt_integer(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer())
        bad_input("{}: metadata {} has type {}, expected an integer", path_, key,
                  gguf_value_type_name(v->type));
    return v->i;
}

std::optional<double> GgufModel::opt_number(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_float()) return v->f;
    if (v->is_integer()) return static_cast<double>(v->i);
    bad_input("{}: metadata {} has type {}, expected a number", path_, key,
              gguf_value_type_name(v->type));
}

std::optional<bool> GgufModel::opt_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::BOOL)
        bad_input("{}: metadata {} has type {}, expected BOOL", path_, key,
                  gguf_value_type_name(v->type));
    return v->i != 0;
}

std::optional<std::string_view> GgufModel::opt_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::STRING)
        bad_input("{}: metadata {} has type {}, expected STRING", path_, key,
                  gguf_value_type_name(v->type));
    return v->str;
}

int64_t GgufModel::integer(std::string_view key) const {
    auto v = opt_integer(key);
    if (!v) bad_input("{}: metadata {} is missing", path_, key);
    return *v;
}

std::string_view GgufModel::string(std::string_view key) const {
    auto v = opt_string(key);
    if (!v) bad_input("{}: metadata {} is missing", path_, key);
    return *v;
}

}  // namespace myriad
