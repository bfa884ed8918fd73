// accuracy_report --rows-csv FILE: one line per row with the prediction's breakdown, for analysing where the model
// errs term by term (not part of docs/accuracy.md).
#include <cstdio>
#include <fstream>
#include <string>

#include "accuracy_sections.h"
#include "paratune/advisor/breakdown_terms.h"
#include "paratune/advisor/model.h"

namespace paratune::accuracy {

bool write_rows_csv(const std::string& path, const Report& rep, const HeldOut& held) {
  std::ofstream o(path);
  if (!o) return false;
  // The breakdown's columns walk the term table, so they always add up to pred_s ("recompute_s": the layout's
  // recompute mode has the column "recompute").
  o << "id,source,stack,gen,gpu,precision,gpus,model,layers,hidden,seq,gbs,tp,pp,dp,cp,v,mb,zero,recompute,rank_only,"
       "meas_s,pred_s,err_in,err_src,err_gen,err_stack";
  for (const auto& t : advisor::kBreakdownTerms) o << "," << t.name << (std::string(t.name) == "recompute" ? "_s" : "");
  o << ",mem_gib,fits\n";
  for (size_t i = 0; i < rep.rows.size(); ++i) {
    const Row& r = rep.rows[i];
    const auto p = calib::predict_row(r, rep.params);
    const auto res = advisor::Evaluator(r.s, r.fw, rep.params).evaluate(p.layout);
    const auto& l = p.layout;
    char line[1024];
    std::snprintf(line, sizeof line,
                  "%s,%c,%s,%s,%s,%s,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%.6g,%.6g,%.4f,%.4f,%.4f,%.4f",
                  r.id.c_str(), r.source[0], r.stack.c_str(), r.gen.c_str(), r.s.cluster.gpu.c_str(),
                  to_string(r.s.training.precision), r.s.total_gpus(), r.s.model.name.c_str(), r.s.model.layers,
                  r.s.model.hidden, r.s.model.seq_len, r.s.training.global_batch, l.tp, l.pp, l.dp, l.cp,
                  l.virtual_stages, l.micro_batch, l.zero_stage, to_string(l.recompute), int(r.rank_only),
                  r.meas_time_s, p.time_s, throughput_error(r, p.time_s), throughput_error(r, held.source[i]),
                  throughput_error(r, held.generation[i]), throughput_error(r, held.stack[i]));
    o << line;
    for (const auto& t : advisor::kBreakdownTerms) {
      std::snprintf(line, sizeof line, ",%.5g", res.br.*t.field);
      o << line;
    }
    std::snprintf(line, sizeof line, ",%.4g,%d\n", p.mem_gib, int(p.fits));
    o << line;
  }
  return bool(o);
}

}  // namespace paratune::accuracy
