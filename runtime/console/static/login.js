"use strict";
// The login form: the password goes as JSON (the only open API route); then on to the overview.
GW.applyWords();
document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const error = document.getElementById("error");
  error.textContent = "";
  try {
    const data = await GW.api("api/login", { password: document.getElementById("password").value });
    GW.setCsrf(data.csrf);
    const next = GW.params.get("next");
    location.href = next && /^[a-z]+\.html(\?[^#]*)?$/.test(next) ? next : "index.html";
  } catch (exc) {
    error.textContent = exc.status === 429 ? GW.t("limited") : GW.t("wrong");
  }
});
