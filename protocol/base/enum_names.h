// Enums that travel as their names.
//
// Several wire and log fields (an update's `op`, a grant's `role`, a task
// event's `kind`) were strings compared wherever they were used. They are
// enums now, but their bytes must not change: replicated log entries and
// snapshots written by older builds still replay, and older clients and
// workers still talk to newer coordinators. So such an enum is written as the
// same name it was spelled with before, and read back once, at decode, into
// the enum; a name this build does not know is refused there (wire.h), with
// the field and the value in the message.
//
// An enum opts in by specialising EnumNames with its names, indexed by value
// (so the enum's values must be 0, 1, 2, ...). Enums without names keep
// travelling as numbers (stored codes that must keep their values).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpool {

// Specialise as: template <> struct EnumNames<E> { static constexpr
// std::array<std::string_view, N> kNames = {...}; };
template <typename E>
struct EnumNames;

template <typename E>
concept NamedEnum = std::is_enum_v<E> && requires { EnumNames<E>::kNames; };

// The wire name of `e`; "?" for a value with no name (a cast from a number).
template <NamedEnum E>
constexpr std::string_view NameOf(E e) {
  const auto i = static_cast<size_t>(e);
  return i < EnumNames<E>::kNames.size() ? EnumNames<E>::kNames[i] : std::string_view("?");
}

template <NamedEnum E>
constexpr std::optional<E> EnumFromName(std::string_view name) {
  for (size_t i = 0; i < EnumNames<E>::kNames.size(); ++i) {
    if (EnumNames<E>::kNames[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

// "create, update or delete", for error messages.
template <NamedEnum E>
std::string EnumChoices() {
  const auto& names = EnumNames<E>::kNames;
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

// The refusal of a name no value of E has: "FIELD: 'VALUE' is not A, B or C".
// InvalidArgument (not Malformed): the bytes decode, the value is one this
// build does not accept, as a validator would have said before.
template <NamedEnum E>
std::string NotANameOf(std::string_view field, std::string_view value) {
  return std::string(field) + ": '" + std::string(value.substr(0, 32)) + "' is not " + EnumChoices<E>();
}

}  // namespace gpool
