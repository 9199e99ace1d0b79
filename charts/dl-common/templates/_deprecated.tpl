{{/*
The names these helpers had before dl-common 0.5.0 regrouped its templates by subject (templates/mpi/,
templates/validate/): a chart that includes an old name keeps working. Each renders exactly what its new name does.
They go in dl-common 1.0.0; use the new names:
  dl-common.script.mpiProgram  -> dl-common.mpi.program
  dl-common.script.mpiSettings -> dl-common.mpi.roleSettings
  dl-common.mpi.validate       -> dl-common.validate.mpi
  dl-common.script.validate    -> dl-common.validate.script
*/}}
{{- define "dl-common.script.mpiProgram" -}}{{ include "dl-common.mpi.program" . }}{{- end -}}
{{- define "dl-common.script.mpiSettings" -}}{{ include "dl-common.mpi.roleSettings" . }}{{- end -}}
{{- define "dl-common.mpi.validate" -}}{{ include "dl-common.validate.mpi" . }}{{- end -}}
{{- define "dl-common.script.validate" -}}{{ include "dl-common.validate.script" . }}{{- end -}}
