locals {
  words = split(",", "a,b,c")
  obj   = jsondecode("{\"k\": [1, 2]}")
}

job "funcs" {
  meta {
    upper     = upper("abc")
    joined    = join("-", local.words)
    json      = jsonencode({ x = 1, y = ["z"] })
    b64       = base64encode("drover")
    unb64     = base64decode("ZHJvdmVy")
    fmt       = format("%03d", 7)
    maxed     = max(3, 9, 4)
    len       = length(local.obj.k)
    regex     = regex("[0-9]+", "abc123def")
    replaced  = replace("a.b.c", ".", "/")
    date      = formatdate("YYYY-MM-DD", "2024-03-01T10:00:00Z")
    merged    = jsonencode(merge({ a = 1 }, { b = 2 }))
    file      = trimspace(file("data/motd.txt"))
    exists    = fileexists("data/motd.txt")
    missing   = fileexists("data/nope.txt")
    tried     = try(local.obj.nope, "fallback")
    cond      = length(local.words) > 2 ? "many" : "few"
    forexpr   = join(",", [for w in local.words : upper(w)])
  }

  group "g" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/echo"
        args    = [for w in local.words : "--${w}"]
      }
    }
  }
}
