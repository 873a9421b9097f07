# A task that reads a password through a secret block and hands it to
# the program as an environment variable (Nomad 1.11). drover warns that
# it does not fetch secrets yet and keeps ${secret...} for the client.
job "mailer" {
  group "g" {
    task "send" {
      driver = "exec"
      config {
        command = "/usr/local/bin/mailer"
      }
      secret "smtp" {
        provider = "nomad"
        path     = "mail/smtp"
      }
      env {
        SMTP_PASSWORD = "${secret.smtp.password}"
      }
    }
  }
}
