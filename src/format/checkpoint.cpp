#include "format/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include <fmt/ranges.h>

#include "format/json_file.h"
#include "util/error.h"

namespace myriad {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleName = "model.safetensors";

bool is_file(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

// The shard file names of an index's weight_map, as {tensor -> shard}. A shard name must stay
// inside the checkpoint folder.
std::vector<std::pair<std::string, std::string>> read_weight_map(const std::string& index_path) {
    nlohmann::json index = read_json_file_unordered(index_path);
    if (!index.is_object())
        bad_input("{}: has type {}, expected a JSON object", index_path, index.type_name());
    auto it = index.find("weight_map");
    if (it == index.end()) bad_input("{}: field weight_map is missing", index_path);
    if (!it->is_object())
        bad_input("{}: field weight_map has type {}, expected an object of tensor -> file",
                  index_path, it->type_name());
    std::vector<std::pair<std::string, std::string>> map;
    for (const auto& [tensor, file] : it->items()) {
        if (!file.is_string())
            bad_input("{}: tensor {} maps to a {}, expected a file name", index_path,
                      printable(tensor), file.type_name());
        const auto& name = file.get_ref<const std::string&>();
        fs::path rel(name);
        bool escapes =
            name.empty() || rel.is_absolute() ||
            std::any_of(rel.begin(), rel.end(), [](const fs::path& part) { return part == ".."; });
        if (escapes)
            bad_input("{}: tensor {} maps to \"{}\", which is not a file inside the folder",
                      index_path, printable(tensor), printable(name));
        map.emplace_back(tensor, name);
    }
    return map;
}

}  // namespace

Checkpoint Checkpoint::synthetic(uint64_t seed) {
    MYRIAD_CHECK(seed != 0, "a synthetic checkpoint needs a non-zero seed");
    Checkpoint ck;
    ck.path_ = "(random weights)";
    ck.synthetic_seed_ = seed;
    return ck;
}

Checkpoint Checkpoint::open(const std::string& path) {
    Checkpoint ck;
    ck.path_ = path;
    std::error_code ec;
    if (is_gguf_path(path) && !fs::is_directory(path, ec)) {
        ck.gguf_ = GgufModel::open(path);
        return ck;
    }
    fs::file_status status = fs::status(path, ec);
    std::vector<std::string> files;  // the safetensors files to open, in order
    std::vector<std::pair<std::string, std::string>> weight_map;
    fs::path folder;

    if (fs::is_directory(status)) {
        folder = path;
        if (is_file(folder / kIndexName)) {
            ck.index_path_ = (folder / kIndexName).string();
        } else if (is_file(folder / kSingleName)) {
            files.push_back((folder / kSingleName).string());
        } else {
            for (const auto& entry : fs::directory_iterator(folder, ec)) {
                std::string name = entry.path().filename().string();
                if (name.starts_with('.') || !name.ends_with(".safetensors")) continue;
                if (is_file(entry.path())) files.push_back(entry.path().string());
            }
            if (ec) bad_input("{}: cannot list the folder: {}", path, ec.message());
            std::sort(files.begin(), files.end());
            if (files.empty())
                bad_input(
                    "{}: no safetensors weights in this folder (expected {}, {} or "
                    "*.safetensors files)",
                    path, kIndexName, kSingleName);
        }
    } else if (fs::is_regular_file(status)) {
        if (path.ends_with(".index.json")) {
            ck.index_path_ = path;
            folder = fs::path(path).parent_path();
        } else if (path.ends_with(".safetensors")) {
            files.push_back(path);
        } else {
            bad_input("{}: not a .safetensors file or a folder of them", path);
        }
    } else {
        bad_input("{}: no such file or folder", path);
    }

    // Each shard name of the index -> its position in `files` (opened once however often named).
    std::map<std::string, size_t, std::less<>> shard_files;
    if (!ck.index_path_.empty()) {
        weight_map = read_weight_map(ck.index_path_);
        if (weight_map.empty()) bad_input("{}: weight_map lists no tensors", ck.index_path_);
        for (const auto& [tensor, shard] : weight_map) {
            if (shard_files.contains(shard)) continue;
            std::string file = (folder / shard).lexically_normal().string();
            auto same = std::find(files.begin(), files.end(), file);  // another spelling of it
            if (same == files.end()) {
                if (!is_file(file))
                    bad_input("{}: tensor {} maps to {}, which does not exist", ck.index_path_,
                              printable(tensor), file);
                same = files.insert(files.end(), file);
            }
            shard_files.emplace(shard, static_cast<size_t>(same - files.begin()));
        }
    }

    for (const auto& file : files) {
        ck.files_.push_back(std::make_unique<SafetensorsFile>(file));
        size_t file_index = ck.files_.size() - 1;
        for (const TensorInfo& info : ck.files_.back()->tensors()) {
            auto [it, inserted] = ck.tensors_.try_emplace(info.name, file_index, &info);
            if (!inserted)
                bad_input("{}: tensor {} is also in {}: a tensor name must be in one file only",
                          file, printable(info.name), ck.files_[it->second.first]->path());
        }
    }

    for (const auto& [tensor, shard] : weight_map) {
        auto it = ck.tensors_.find(tensor);
        if (it == ck.tensors_.end() || it->second.first != shard_files.at(shard))
            bad_input("{}: tensor {} is mapped to {}, but that file does not hold it",
                      ck.index_path_, printable(tensor), shard);
    }
    return ck;
}

bool Checkpoint::has(std::string_view name) const {
    return tensors_.find(name) != tensors_.end();
}

TensorView Checkpoint::get(std::string_view name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) {
        const std::string& where = !index_path_.empty()
                                       ? index_path_
                                       : (files_.size() == 1 ? files_.front()->path() : path_);
        bad_input("{}: tensor {} is missing", where, printable(name));
    }
    return files_[it->second.first]->view(*it->second.second);
}

TensorView Checkpoint::expect(std::string_view name, const std::vector<int64_t>& shape,
                              std::initializer_list<DType> dtypes) const {
    TensorView view = get(name);
    if (dtypes.size() > 0 &&
        std::find(dtypes.begin(), dtypes.end(), view.dtype()) == dtypes.end()) {
        std::vector<std::string_view> names;
        for (DType dt : dtypes) names.push_back(dtype_name(dt));
        bad_input("{}: tensor {} has dtype {}, expected {}{}", *view.file, printable(name),
                  dtype_name(view.dtype()), names.size() > 1 ? "one of " : "",
                  fmt::join(names, ", "));
    }
    if (view.shape() != shape)
        bad_input("{}: tensor {} has shape {}, expected [{}]", *view.file, printable(name),
                  view.shape_str(), fmt::join(shape, ", "));
    return view;
}

std::vector<std::string> Checkpoint::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [name, where] : tensors_) out.push_back(name);
    return out;
}

}  // namespace myriad
