/**
 * The risk classes of the risk engine (sidecar/risk), shared by the protocol, the sidecar and the extension.
 * No dependencies: the extension imports it at run time (the CodeLens filter setting), the protocol builds its
 * enums from it. Lowest priority first: a chain of risky commands takes the class that comes last here.
 */
export const RISK_CLASSES = ['deps', 'toolchain', 'config', 'system', 'destructive', 'remote-code'] as const;

/** A risk class. */
export type RiskClass = (typeof RISK_CLASSES)[number];

/** One line per class: what its commands change (settings descriptions, docs, the protocol schema). */
export const RISK_CLASS_DESCRIPTIONS: Record<RiskClass, string> = {
  deps: 'Project dependencies (pip install, npm install, uv add, pipenv install, …)',
  toolchain: 'User or global tools (npm -g, pipx, cargo install, brew, rustup, mise use, …)',
  config:
    'Configuration the agent or the machine runs with (hermes config set, claude mcp add, sed -i on sshd_config or .env, >> ~/.bashrc, tee /etc/…, crontab -, git config --global, …)',
  system:
    'OS packages, services, containers, users, permissions, firewall (apt, systemctl enable, docker run, useradd, chown -R /…, ufw, apt-mark hold, …)',
  destructive:
    'Deletes or overwrites data (rm -rf, git reset --hard, git clean -f, git push --force, dd, mkfs, DROP TABLE, terraform destroy, docker system prune, kubectl delete, …)',
  'remote-code':
    'Code fetched at run time and agent self-updates (curl | sh, npx of a remote package, hermes update, hermes plugins install, claude update, …)',
};
