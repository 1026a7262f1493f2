#include "formats/json_duplicate_keys.h"

#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

namespace fsq {
namespace {

using json = nlohmann::json;

// One linear SAX pass. (nlohmann's callback parser could do it while building the tree, but
// it rescans the parent object at the end of every child object: quadratic in the key count.)
class DuplicateKeyFinder final : public json::json_sax_t {
 public:
  std::optional<std::string> duplicate;

  bool start_object(std::size_t) override {
    open_objects_.emplace_back();
    return true;
  }
  bool end_object() override {
    open_objects_.pop_back();
    return true;
  }
  bool key(string_t& key) override {
    if (!open_objects_.back().insert(key).second) {
      duplicate = key;
      return false;  // stop: one is enough to refuse the file
    }
    return true;
  }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  std::vector<std::unordered_set<std::string>> open_objects_;
};

}  // namespace

std::optional<std::string> first_duplicate_key(std::string_view text) {
  DuplicateKeyFinder finder;
  json::sax_parse(text.begin(), text.end(), &finder);
  return finder.duplicate;
}

}  // namespace fsq
