#pragma once
/// @file
/// Umbrella header: everything a user of ata needs.

#include "ata/core/allocation.hpp"
#include "ata/core/ata_empirical_policy.hpp"
#include "ata/core/ata_policy.hpp"
#include "ata/core/confidence.hpp"
#include "ata/core/dynamic_policy.hpp"
#include "ata/core/error.hpp"
#include "ata/core/lower_bound_policy.hpp"
#include "ata/core/make_policy.hpp"
#include "ata/core/oracle_policy.hpp"
#include "ata/core/policy.hpp"
#include "ata/core/solver.hpp"
#include "ata/core/uniform_policy.hpp"
#include "ata/core/worker_stats.hpp"
#include "ata/sim/random.hpp"
#include "ata/sim/scenario.hpp"
#include "ata/sim/time_model.hpp"
