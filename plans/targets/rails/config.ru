# A Rails application of reference experiment 003's two endpoints: /pong answers the
# 4-byte body from a controller action, the 50,991-byte PNG goes out with send_file.
# One file, no generator: Debian's Rails 6.1 (ruby-rails) in production mode with its
# default middleware stack, so each request crosses routing, the controller and the
# stack as in an application made with `rails new`. Served by Puma (rails.sh).
require "action_controller/railtie"

PNG = File.expand_path("../../../crates/server/assets/FiringGeometry.png", __dir__)

class PlanApp < Rails::Application
  config.root = __dir__
  config.eager_load = true
  config.cache_classes = true
  config.consider_all_requests_local = false
  config.logger = Logger.new(nil)
  config.log_level = :fatal
  config.secret_key_base = "plan-target-no-sessions-are-kept"
  config.hosts.clear
  config.public_file_server.enabled = false
end

class PlanController < ActionController::Base
  # The verification asks every server for Server and Date headers; Puma sends neither.
  before_action do
    response.headers["Server"] = "rails"
    response.headers["Date"] = Time.now.httpdate
  end

  def pong
    render plain: "PONG"
  end

  def png
    send_file PNG, type: "image/png", disposition: "inline"
  end
end

# Drawn after initialize!, which would otherwise replace them with config/routes.rb's.
PlanApp.initialize!
PlanApp.routes.draw do
  get "/pong" => "plan#pong"
  get "/FiringGeometry.png" => "plan#png"
end
run PlanApp
