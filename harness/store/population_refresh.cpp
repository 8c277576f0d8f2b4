#include "store/population_refresh.h"

#include "store/population.h"
#include "store/records.h"

namespace evo {

void refresh_populations(RecordFollower& records, const std::filesystem::path& populations_dir,
                         const std::string& gpu) {
  const auto others = lock_results(records.dir());  // and a merge or rebuild beside the run
  records.refresh();
  for (const auto& [key, pop] : derive_typed_populations(records.records()))
    if (pop.gpu == gpu) write_population(populations_dir, pop);
}

}  // namespace evo
