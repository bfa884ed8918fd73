/* What a user who does not use a stock srun can send: a job step whose environment names another partition, node
 * count and node list than Slurm gave it. Loaded into srun with LD_PRELOAD (the user owns that process), this
 * library puts itself in front of libslurm's slurm_step_launch() and calls the real one with the launch
 * environment edited: every NAME=VALUE of FORGE_STEP_ENV (separated by ';') replaces or adds that variable,
 * after srun has set its own. slurmstepd receives that environment as it is sent (Slurm 22.05 and 24.11:
 * src/api/step_launch.c copies params->env into the launch message), so a plugin that reads the step's
 * partition, node count or node list from it believes the forgery; tests/integration/test_fault_forged_step.sh.
 * A line "forge_step_env: forged N variables" on stderr proves the launch went through here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

typedef int (*launch_fn)(slurm_step_ctx_t *, const slurm_step_launch_params_t *,
			 const slurm_step_launch_callbacks_t *);

/* Replace NAME=... in env (count n) or append it; returns the new count. */
static size_t put(char **env, size_t n, char *assignment)
{
	const size_t name_len = (size_t)(strchr(assignment, '=') - assignment) + 1;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(env[i], assignment, name_len) == 0) {
			env[i] = assignment;
			return n;
		}
	}
	env[n] = assignment;
	return n + 1;
}

int slurm_step_launch(slurm_step_ctx_t *ctx, const slurm_step_launch_params_t *params,
		      const slurm_step_launch_callbacks_t *callbacks)
{
	launch_fn real = (launch_fn)dlsym(RTLD_NEXT, "slurm_step_launch");
	const char *spec = getenv("FORGE_STEP_ENV");
	if (!real)
		return -1;
	if (!spec || !*spec || !params)
		return real(ctx, params, callbacks);

	/* srun leaves envc at 0: the array ends at its NULL. */
	size_t given = 0;
	while (params->env && params->env[given])
		given++;
	char *copy = strdup(spec);
	size_t extra = 1;
	for (const char *p = spec; *p; p++)
		extra += (*p == ';');
	char **env = calloc(given + extra + 1, sizeof(char *));
	if (!copy || !env)
		return real(ctx, params, callbacks);
	size_t n = 0;
	for (size_t i = 0; i < given; i++)
		env[n++] = params->env[i];
	int forged = 0;
	char *save = NULL;
	for (char *tok = strtok_r(copy, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		if (!strchr(tok, '=') || tok[0] == '=')
			continue;
		n = put(env, n, tok);
		forged++;
	}
	env[n] = NULL;
	slurm_step_launch_params_t forged_params = *params;
	forged_params.env = env;
	forged_params.envc = (uint32_t)n;
	fprintf(stderr, "forge_step_env: forged %d variables\n", forged);
	/* env and copy stay allocated: libslurm may keep pointers into them for the life of the step. */
	return real(ctx, &forged_params, callbacks);
}
