#include "ata/runtime/batch_options.hpp"

#include <string>

namespace ata::runtime {

Backups parse_backups(std::string_view name) {
  if (name == "off") return Backups::off;
  if (name == "copies") return Backups::copies;
  if (name == "on") return Backups::on;
  throw InvalidArgument("backups must be off, copies or on, got '" + std::string(name) + "'");
}

Binding parse_binding(std::string_view name) {
  if (name == "arrival") return Binding::on_arrival;
  if (name == "late") return Binding::late;
  throw InvalidArgument("binding must be arrival or late, got '" + std::string(name) + "'");
}

}  // namespace ata::runtime
